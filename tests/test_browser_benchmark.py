"""The benchmark page in a real browser: a tiny sweep shows its table; Cancel stops a run cleanly; the controls
write the link.

Uses the shared harness (``streamlit run`` + Debian's Chromium). Nothing here asserts a speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.browser import StreamlitServer, exception_texts, goto, rerun, screenshot, wait_idle

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.browser

TINY = "/benchmark?bm_impl=textbook&bm_impl=trace&bm_impl=sdpa&bm_impl=tiled&bm_nmax=256&bm_d=16&bm_heads=1"


def main_text(page: Page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def link(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def test_a_tiny_sweep_shows_the_results_table(page: Page, streamlit_server: StreamlitServer, artifacts_dir: Path):
    goto(page, streamlit_server, TINY)
    assert "Press Run to measure" in main_text(page)
    screenshot(page, artifacts_dir, "benchmark-before-run")
    page.get_by_role("button", name="Forget measurements").click()
    wait_idle(page)
    rerun(page, lambda: page.get_by_role("button", name="Run").click(), timeout=300_000)
    assert exception_texts(page) == []
    text = main_text(page)
    assert "Results" in text and "Done in" in text
    page.get_by_role("tab", name="Table").click()
    table = page.locator("[role='tabpanel']:visible [data-testid='stDataFrame']")
    table.wait_for(timeout=10_000)
    assert table.count() == 1
    assert page.get_by_role("button", name="Download CSV").is_visible()
    screenshot(page, artifacts_dir, "benchmark-after-run")


def test_cancel_stops_a_run_and_the_next_run_still_works(page: Page, streamlit_server: StreamlitServer):
    # trace and tiled: the two slowest paths, so the sweep is still running when Cancel arrives
    goto(page, streamlit_server,
         "/benchmark?bm_impl=trace&bm_impl=tiled&bm_nmax=2048&bm_d=16&bm_heads=1&bm_budget=120")  # fmt: skip
    page.get_by_role("button", name="Forget measurements").click()
    wait_idle(page)
    page.get_by_role("button", name="Run").click()
    page.get_by_text("n = 256").first.wait_for(timeout=120_000)  # the sweep is under way
    rerun(page, lambda: page.get_by_role("button", name="Cancel").click(), timeout=300_000)
    assert exception_texts(page) == []
    assert "The last run was stopped after" in main_text(page)
    # The lock was released: a new (tiny) run goes through.
    goto(page, streamlit_server, TINY)
    rerun(page, lambda: page.get_by_role("button", name="Run").click(), timeout=300_000)
    assert exception_texts(page) == [] and "Done in" in main_text(page)


def test_the_controls_write_the_link_and_an_old_link_is_rewritten(page: Page, streamlit_server: StreamlitServer):
    goto(page, streamlit_server, "/benchmark?bm_impl=naive,tiled&bm_causal=1&bm_nmax=4096")  # written before bind
    assert exception_texts(page) == []
    assert link(page) == {"bm_impl": ["textbook", "tiled"], "bm_causal": ["true"], "bm_nmax": ["4096"]}
    assert "This link asked for" not in main_text(page) and "12 configurations" in main_text(page)
    rerun(page, lambda: page.locator(".st-key-bm_causal label").click())
    assert "bm_causal" not in link(page), "back to the default: it drops out of the link"
    rerun(page, lambda: page.locator(".st-key-bm_impl [data-testid='stMultiSelect']").get_by_role(
        "button", name="Remove textbook").click())  # fmt: skip
    assert link(page)["bm_impl"] == ["tiled"]
    page.locator(".st-key-bm_dtype [data-testid='stSelectbox']").click()
    rerun(page, page.get_by_role("option", name="bfloat16").click)
    assert link(page)["bm_dtype"] == ["bfloat16"]
    assert "6 configurations" in main_text(page)  # tiled at n = 128 … 4096
    mode = page.locator(".st-key-bm_mode")
    rerun(page, mode.get_by_role("radio", name="forward + backward", exact=True).click)
    assert link(page)["bm_mode"] == ["forward + backward"], "the label, as the link names it"
    rerun(page, mode.get_by_role("radio", name="forward", exact=True).click)
    assert "bm_mode" not in link(page)
    assert exception_texts(page) == []
