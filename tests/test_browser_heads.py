"""The heads page in a real browser: every tab renders, in normal and talk mode; the URL follows the view, a link
restores it and an older link is rewritten in today's form.

Uses the shared harness (``streamlit run`` + Debian's Chromium). Nothing here asserts a speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from tests.support.browser import ALERT, TALK_VIEWPORT, StreamlitServer, exception_texts, goto, rerun, screenshot

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

TABS = ("Split", "Heads side by side", "MHA → GQA → MQA", "KV-cache calculator", "Decode")
# The decode tab's live timing at its smallest, so that opening the tab costs a second or two.
SMALL = "hd_tmax=2k&hd_tdm=64"


def query(page: Page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def visible_panel_has_content(page: Page) -> bool:
    panel = page.get_by_role("tabpanel").filter(visible=True)
    return panel.count() == 1 and panel.locator("[data-testid='stElementContainer']").count() > 0


def figure_appears(page: Page, timeout: float = 30_000) -> bool:
    """Whether the open tab shows a Plotly chart within ``timeout`` ms.

    The chart's code is a chunk the browser loads the first time a page draws one; until it
    arrives Streamlit shows a skeleton, even though the script has finished. Counting the charts
    at once then finds none (seen here in 5 of 8 fresh tabs, for up to 0.9 s), so we wait.
    """
    chart = page.locator("[role='tabpanel']:visible [data-testid='stPlotlyChart']").first
    try:
        chart.wait_for(state="attached", timeout=timeout)
    except Exception as exc:  # Playwright's TimeoutError
        if "Timeout" not in type(exc).__name__:
            raise
        return False
    return True


def test_every_tab_renders_by_clicking_and_keeps_the_url(
    page: Page, streamlit_server: StreamlitServer, artifacts_dir: Path
) -> None:
    goto(page, streamlit_server, f"/heads?{SMALL}")
    assert "Heads, shared keys and the KV cache" in page.locator("[data-testid='stMain']").inner_text()
    for i, tab in enumerate(TABS):
        if i > 0:  # the tabs rerun the script: only the open tab is computed
            rerun(page, page.get_by_role("tab", name=tab, exact=True).click, timeout=120_000)
            assert query(page).get("hd_tab") == tab, "the open tab must be in the URL"
        assert exception_texts(page) == [], f"exception on the {tab} tab"
        assert visible_panel_has_content(page), f"the {tab} tab is empty"
        assert figure_appears(page), f"no figure on {tab}"
        screenshot(page, artifacts_dir, f"heads-tab{i}")


def test_every_tab_renders_in_talk_mode(browser, streamlit_server: StreamlitServer, artifacts_dir: Path) -> None:
    context = browser.new_context(viewport=TALK_VIEWPORT)
    try:
        page = context.new_page()
        for i, tab in enumerate(TABS):
            goto(page, streamlit_server, f"/heads?talk=true&hd_tab={quote(tab)}&{SMALL}", timeout=120_000)
            assert exception_texts(page) == [], f"exception on the {tab} tab in talk mode"
            assert query(page).get("talk") == "true"
            assert visible_panel_has_content(page)
            screenshot(page, artifacts_dir, f"heads-talk-tab{i}")
    finally:
        context.close()


def test_the_kv_heads_slider_moves_with_the_keyboard_and_lands_in_the_url(
    page: Page, streamlit_server: StreamlitServer
) -> None:
    goto(page, streamlit_server, f"/heads?hd_tab={quote(TABS[2])}&hd_h=8&hd_kv=2")
    thumb = page.locator(".st-key-hd_kv input[type='range']")
    thumb.focus()
    rerun(page, lambda: page.keyboard.press("ArrowLeft"))  # 2 → 1: multi-query
    assert exception_texts(page) == []
    assert query(page).get("hd_kv") == "1"
    assert page.locator(".st-key-hd_kv [data-testid='stSliderThumbValue']").inner_text().strip() == "1"
    assert "MQA" in page.locator("[data-testid='stMain'] .katex").first.inner_text()  # the formula names the kind


def test_a_changed_control_lands_in_the_url_and_its_link_restores_it(
    page: Page, streamlit_server: StreamlitServer
) -> None:
    goto(page, streamlit_server, f"/heads?hd_tab={quote(TABS[3])}")
    rerun(page, page.locator(".st-key-hd_weights label").click)
    assert query(page).get("hd_weights") == "false"
    link = urlsplit(page.url)
    goto(page, streamlit_server, f"{link.path}?{link.query}")  # a new session from that link
    assert not page.locator(".st-key-hd_weights input").is_checked()
    assert exception_texts(page) == []


def test_an_older_link_is_rewritten_in_todays_form(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, f"/heads?hd_tab={quote(TABS[3])}&hd_ctx=32768&hd_weights=0&talk=1")
    page.wait_for_url(lambda url: "hd_ctx=32k" in url, timeout=30_000)  # the rewrite takes a rerun or two
    page.locator(".st-key-hd_ctx [data-testid='stSliderThumbValue']", has_text="32k").wait_for(timeout=30_000)
    assert exception_texts(page) == []
    assert {k: query(page).get(k) for k in ("hd_ctx", "hd_weights", "talk")} == {
        "hd_ctx": "32k", "hd_weights": "false", "talk": "true"
    }  # fmt: skip
    assert "This link asked for" not in " ".join(page.locator(ALERT).all_inner_texts())


def test_a_tampered_link_shows_a_notice_not_a_traceback(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, f"/heads?hd_tab={quote(TABS[2])}&hd_h=8&hd_kv=3&hd_dm=%3Cb%3E&hd_seed=1e99")
    assert exception_texts(page) == []
    alerts = " ".join(page.locator(f"{ALERT}").all_inner_texts())
    assert "This link asked for" in alerts and "must divide" in alerts
    assert all(f"{key} =" in alerts for key in ("hd_kv", "hd_dm", "hd_seed")) and "<b>" not in alerts
