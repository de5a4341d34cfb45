"""A phone (390×844) and a portrait tablet (768×1024): the sidebar starts closed and every page fits the width.

What "fits" means is :func:`tests.support.browser.too_wide`: no element past the window's edge (a box that
scrolls sideways, like a long formula, is allowed), no label or button text ending in "…", no label broken
inside a word. Before the frame's narrow-screen rules the heads page at 768 px broke "Seed" into "See / d",
cut "Causal mask" to "Causal …", and the walkthrough's "◀ Previous" to "◀ Previo…". At 1400 px the sidebar
still opens by itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.browser import (
    PHONE_VIEWPORT,
    TABLET_VIEWPORT,
    VIEWPORT,
    StreamlitServer,
    exception_texts,
    goto,
    too_wide,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

SIZES = {"phone": PHONE_VIEWPORT, "tablet": TABLET_VIEWPORT}
# The pages with the most controls side by side and the widest figures; the rest share their frame.
PAGES = ["/walkthrough?preset=sentence&mask=causal", "/heads", "/model", "/efficient"]
SIDEBAR = "[data-testid='stSidebar']"
FRAME_CSS = "() => [...document.querySelectorAll('style')].some(s => s.textContent.includes('stMarkdownEllipsis'))"


def open_narrow(page: Page, server: StreamlitServer, path: str) -> None:
    """Open ``path`` and wait for the frame's CSS too: ``st.html`` mounts its style a moment after the run ends."""
    goto(page, server, path)
    page.wait_for_function(FRAME_CSS, timeout=15_000)


@pytest.fixture(params=list(SIZES), scope="module")
def narrow_page(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=SIZES[request.param])
    context.set_default_timeout(60_000)
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("path", PAGES)
def test_page_fits_a_narrow_screen(narrow_page: Page, streamlit_server: StreamlitServer, path: str) -> None:
    open_narrow(narrow_page, streamlit_server, path)
    assert exception_texts(narrow_page) == []
    assert narrow_page.locator(SIDEBAR).get_attribute("data-collapsed") == "true"
    assert too_wide(narrow_page) == [], narrow_page.viewport_size


def test_a_wide_screen_opens_the_sidebar(browser: Browser, streamlit_server: StreamlitServer) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        goto(page, streamlit_server, "/heads")
        assert page.locator(SIDEBAR).get_attribute("data-collapsed") == "false"
    finally:
        context.close()


def test_the_check_sees_a_cut_off_label(browser: Browser, streamlit_server: StreamlitServer) -> None:
    """The check itself: with the frame's narrow-screen rules taken out, the heads page at 768 px is reported."""
    context = browser.new_context(viewport=TABLET_VIEWPORT)
    try:
        page = context.new_page()
        open_narrow(page, streamlit_server, "/heads")
        removed = page.evaluate(
            """() => { const rules = Array.from(document.querySelectorAll('style'))
                           .filter(s => s.textContent.includes('stMarkdownEllipsis'));
                       rules.forEach(s => s.remove()); return rules.length; }"""
        )
        assert removed >= 1
        page.wait_for_timeout(200)
        assert any("Causal mask" in p for p in too_wide(page)), too_wide(page)
    finally:
        context.close()
