"""The Real attention page in a real browser: it loads (and in talk mode at 1280×720), a click on a
head's tile opens that head in the walkthrough (talk mode going along), and a sentence typed into the box
reruns the page and is written in the link.

Uses the shared harness (``streamlit run`` + Debian's Chromium). Nothing here asserts a speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.browser import TALK_VIEWPORT, StreamlitServer, exception_texts, goto, rerun, screenshot, wait_idle

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

TIRED = "The animal didn't cross the street because it was too tired."


def query(page: Page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def main_text(page: Page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def test_the_page_loads_with_every_section(page: Page, streamlit_server: StreamlitServer, artifacts_dir: Path):
    goto(page, streamlit_server, "/model", timeout=120_000)
    assert exception_texts(page) == []
    text = main_text(page)
    for heading in ("Real attention", "All 72 heads at once", "Who does", "Attention sinks"):
        assert heading in text, heading
    page.locator(".st-key-md_grid .js-plotly-plot").wait_for(state="visible")
    screenshot(page, artifacts_dir, "model")

    page.set_viewport_size(TALK_VIEWPORT)
    goto(page, streamlit_server, "/model?talk=true", timeout=120_000)
    assert exception_texts(page) == []
    assert query(page).get("talk") == "true"
    page.locator(".st-key-md_grid .js-plotly-plot").wait_for(state="visible")
    screenshot(page, artifacts_dir, "model-talk")

    # The link under the grid opens the chosen head in the walkthrough; talk mode goes along by itself.
    rerun(page, page.get_by_role("link", name="Open L3·H1 in the walkthrough", exact=False).click, timeout=120_000)
    assert urlsplit(page.url).path.endswith("/walkthrough") and exception_texts(page) == []
    q = query(page)
    assert (q.get("preset"), q.get("layer"), q.get("head"), q.get("talk")) == ("Trained model", None, None, "true")
    assert page.locator(".st-key-talk input").is_checked()


def test_clicking_a_tile_opens_that_head_in_the_walkthrough(page: Page, streamlit_server: StreamlitServer):
    goto(page, streamlit_server, "/model", timeout=120_000)
    area = page.locator(".st-key-md_grid .js-plotly-plot .nsewdrag").first
    area.wait_for(state="visible")
    box = area.bounding_box()
    assert box is not None
    # The bottom-right tile is layer 5, head 11: click inside it, away from its centre.
    rerun(page, lambda: page.mouse.click(box["x"] + box["width"] * 0.97, box["y"] + box["height"] * 0.93),
          timeout=120_000)  # fmt: skip
    wait_idle(page, timeout=120_000)
    assert urlsplit(page.url).path.endswith("/walkthrough")
    q = query(page)
    assert (q.get("preset"), q.get("layer"), q.get("head")) == ("Trained model", "5", "11")
    assert exception_texts(page) == []
    assert "Real weights: all-MiniLM-L6-v2, layer 5, head 11" in main_text(page)


def test_typing_a_sentence_reruns_and_keeps_it_in_the_url(page: Page, streamlit_server: StreamlitServer):
    goto(page, streamlit_server, "/model", timeout=120_000)
    box = page.locator(".st-key-md_text input")
    box.fill("The trophy didn't fit because it was too big.")
    rerun(page, lambda: box.press("Enter"), timeout=120_000)
    assert exception_texts(page) == []
    assert query(page).get("md_text") == "The trophy didn't fit because it was too big."
    assert query(page).get("md_ex") == "Your own sentence"
    assert "Who does\nit\nlook at?" in main_text(page) or "Who does it look at?" in main_text(page)
    box.fill("")
    rerun(page, lambda: box.press("Enter"), timeout=120_000)
    assert "the text is empty" in main_text(page)
    assert exception_texts(page) == []
