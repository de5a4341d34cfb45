"""The "Watch it learn" page in a real browser: Train draws the curves while it runs, Stop ends it and keeps the
run, and in talk mode at 1280×720 the loss curve and the heads fit the window side by side. Nothing here asserts a
speed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.browser import TALK_VIEWPORT, StreamlitServer, exception_texts, goto, screenshot, wait_idle

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser


def main_text(page: Page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def test_train_draws_live_and_stop_keeps_the_run(page: Page, streamlit_server: StreamlitServer,
                                                 artifacts_dir: Path) -> None:  # fmt: skip
    goto(page, streamlit_server, "/induction?in_steps=3000&in_seed=7", timeout=120_000)
    assert "Showing the shipped run" in main_text(page)
    page.get_by_role("button", name="Train", exact=True).click()
    bar = page.locator("[data-testid='stProgress']")
    bar.wait_for(timeout=60_000)
    page.wait_for_function(  # a record past the first has been drawn: the loop is running
        "() => /step [1-9]/.test(document.querySelector('[data-testid=stProgress]')?.innerText || '')",
        timeout=60_000,
    )
    assert exception_texts(page) == []
    page.get_by_test_id("stTabs").get_by_role("button", name="Stop").click()
    wait_idle(page, timeout=60_000)
    text = main_text(page)
    assert "Showing your run: seed 7, 3000 steps, stopped at step" in text
    assert page.get_by_role("button", name="Show the shipped run").is_enabled()
    assert exception_texts(page) == []
    screenshot(page, artifacts_dir, "induction-stopped")


def test_talk_mode_fits_the_loss_and_the_heads_side_by_side(browser: Browser, streamlit_server: StreamlitServer,
                                                             artifacts_dir: Path) -> None:  # fmt: skip
    context = browser.new_context(viewport=TALK_VIEWPORT)
    try:
        page = context.new_page()
        goto(page, streamlit_server, "/induction?talk=true", timeout=120_000)
        assert exception_texts(page) == []
        charts = page.locator("[role='tabpanel']:visible [data-testid='stPlotlyChart']")
        charts.first.wait_for(timeout=30_000)
        loss, heads = (charts.nth(i).bounding_box() for i in range(2))
        assert loss is not None and heads is not None
        for box in (loss, heads):
            assert box["y"] + box["height"] <= TALK_VIEWPORT["height"], box
        assert loss["x"] + loss["width"] <= heads["x"]  # beside each other, not stacked
        screenshot(page, artifacts_dir, "induction-talk")
    finally:
        context.close()
