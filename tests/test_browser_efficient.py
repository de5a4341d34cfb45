"""The Beyond n² page in a real browser: it loads, a tab switch lands in the URL, the main figure of each tab fits a
1280×720 window in talk mode, and a tiny run shows its results. Nothing here asserts a speed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from tests.support.browser import (
    PHONE_VIEWPORT,
    TALK_VIEWPORT,
    StreamlitServer,
    exception_texts,
    goto,
    rerun,
    screenshot,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

# linear beside SDPA at n = 128: a run of a second or two, and no FlexAttention compile
TINY = "/efficient?ef_tab=Cost&ef_routes=linear&ef_nmin=128&ef_nmax=128&ef_budget=5"


def shown(page: Page) -> tuple[str, dict[str, list[str]]]:
    """The main area's text, and the values in the address bar."""
    return page.locator("[data-testid='stMain']").inner_text(), parse_qs(urlsplit(page.url).query)


def test_the_page_loads_and_a_tab_switch_lands_in_the_url(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, "/efficient", timeout=120_000)
    assert exception_texts(page) == []
    text, _ = shown(page)
    assert "Beyond n²" in text and "Work skipped" in text
    rerun(page, page.get_by_role("tab", name="Accuracy", exact=True).click, timeout=120_000)
    text, link = shown(page)
    assert link.get("ef_tab") == ["Accuracy"] and "Output error" in text
    assert exception_texts(page) == []
    rerun(page, page.locator(".st-key-ef_in").get_by_role("radio", name="Random").click)  # written by its label
    assert shown(page)[1].get("ef_in") == ["Random"]


def test_each_main_figure_fits_the_window_in_talk_mode(browser: Browser, streamlit_server: StreamlitServer,
                                                       artifacts_dir: Path) -> None:  # fmt: skip
    context = browser.new_context(viewport=TALK_VIEWPORT)
    try:
        page = context.new_page()
        # The main figure's panels (own charts, in columns): side by side, each within the window
        for i, (tab, panels) in enumerate((("Sparse patterns", 2), ("Kernels & low rank", 1), ("Accuracy", 2))):
            goto(page, streamlit_server, f"/efficient?talk=true&ef_tab={quote(tab)}", timeout=120_000)
            assert exception_texts(page) == [], tab
            charts = page.locator("[role='tabpanel']:visible [data-testid='stPlotlyChart']")
            charts.first.wait_for(timeout=30_000)
            boxes = [charts.nth(p).bounding_box() for p in range(panels)]
            for box in boxes:
                assert box is not None and box["y"] + box["height"] <= TALK_VIEWPORT["height"], (tab, box)
            assert all(b["y"] == boxes[0]["y"] and b["x"] > boxes[0]["x"] for b in boxes[1:]), (tab, boxes)
            screenshot(page, artifacts_dir, f"efficient-talk-tab{i}")
    finally:
        context.close()


def test_on_a_phone_the_panels_stack_at_the_full_width(browser: Browser, streamlit_server: StreamlitServer) -> None:
    """Exact beside the route is two charts in columns: a phone stacks them, each as wide as the column (as one
    figure of two subplots they shared ~356 px, and their titles ran into each other)."""
    context = browser.new_context(viewport=PHONE_VIEWPORT)
    try:
        page = context.new_page()
        goto(page, streamlit_server, "/efficient?ef_tab=Accuracy", timeout=120_000)
        charts = page.locator("[role='tabpanel']:visible [data-testid='stPlotlyChart']")
        charts.first.wait_for(timeout=30_000)
        first, second = charts.nth(0).bounding_box(), charts.nth(1).bounding_box()
        assert first is not None and second is not None
        assert second["y"] >= first["y"] + first["height"] and second["x"] == first["x"], (first, second)
        assert min(first["width"], second["width"]) > 0.8 * PHONE_VIEWPORT["width"], (first, second)
    finally:
        context.close()


def test_a_tiny_run_shows_its_results(page: Page, streamlit_server: StreamlitServer, artifacts_dir: Path) -> None:
    goto(page, streamlit_server, TINY, timeout=120_000)
    assert "Press Run to measure" in shown(page)[0]
    rerun(page, lambda: page.get_by_role("button", name="Run").click(), timeout=300_000)
    assert exception_texts(page) == []
    text, _ = shown(page)
    assert "Done in" in text and "Press Run to measure" not in text
    assert page.locator("[data-testid='stPlotlyChart']").count() == 2  # time and memory
    assert page.locator("[data-testid='stDataFrame']").count() == 2  # the routes, and LRA beside them
    screenshot(page, artifacts_dir, "efficient-after-run")
