"""Talk mode on a projector: numbers never overlap, and each step's figure fits the window.

At 1280×720 and 1920×1080 in Chromium, the walkthrough's heatmaps are read from the SVG: no two
cell numbers' boxes intersect and none runs past its plot (tests/layout_checks.py), and the
step's heading, formula and figure lie wholly in the window without scrolling.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.browser import (
    StreamlitServer,
    cut_off,
    exception_texts,
    goto,
    heatmap_boxes,
    heatmap_text_problems,
    wait_idle,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

SIZES = [(1280, 720), (1920, 1080)]
VIEWS = [
    *[f"preset=sentence&mask=causal&step={s}" for s in range(6)],
    "preset=sentence&step=1",  # unmasked scores: the widest labels (“−21.2”)
    "preset=random&n=16&step=4",
    "preset=random&n=16&mask=padding&pad=3&step=3",
    "preset=tiny&view=all",
    "preset=sentence&view=compare",
    "preset=model&step=4",  # a trained model's head (issue 13), where its weights are present
]


@pytest.fixture(params=SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def talk_page(request: pytest.FixtureRequest, browser: Browser, streamlit_server: StreamlitServer) -> Iterator[Page]:
    w, h = request.param
    context = browser.new_context(viewport={"width": w, "height": h})
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def _charts_drawn(page: Page) -> None:
    page.wait_for_function(
        """() => { const c = Array.from(document.querySelectorAll("[data-testid='stPlotlyChart']"));
                   return c.length > 0 && c.every(e => e.querySelector('.main-svg') !== null); }""",
        timeout=30_000,
    )


def _step_fit_problems(page: Page, step: str, settle_s: float = 10.0) -> list[str]:
    """Why the step's heading, formula or figure is not wholly in the window, once the page settles.

    In talk mode the viewport probe reports the window's size after the first paint, and the rerun
    it starts redraws the figure at its fitted height; while that redraw is under way the chart can
    be briefly detached. So the check is repeated until it passes or ``settle_s`` runs out, waiting
    for the app to be idle between tries; what is reported is the last try's answer.
    """
    main = page.locator("[data-testid='stMain']")
    parts = (
        ("heading", main.locator("[data-testid='stHeading']").filter(has_text=f"{step}.").first),
        ("formula", main.locator(".katex-display").first),
        ("figure", main.locator("[data-testid='stPlotlyChart']").first),
    )
    deadline = time.monotonic() + settle_s
    while True:
        found = [f"the {what} is cut off: {why}" for what, loc in parts if (why := cut_off(page, loc))]
        if not found or time.monotonic() > deadline:
            return found
        page.wait_for_timeout(250)
        wait_idle(page)


def test_heatmap_numbers_never_overlap_and_steps_fit(talk_page: Page, streamlit_server: StreamlitServer) -> None:
    page = talk_page
    problems: list[str] = []
    numbers_seen = 0
    for view in VIEWS:
        goto(page, streamlit_server, f"/walkthrough?talk=1&{view}")
        _charts_drawn(page)
        page.wait_for_timeout(300)
        assert exception_texts(page) == [], view
        problems += [f"{view}: {p}" for p in heatmap_text_problems(page)]
        numbers_seen += sum(len(f["texts"]) for f in heatmap_boxes(page))
        step = re.search(r"step=(\d)", view)
        if step and "view=" not in view:
            problems += [f"{view}: {p}" for p in _step_fit_problems(page, step.group(1))]
    assert numbers_seen > 100, "the check must see cell numbers, or it proves nothing"
    assert not problems, "\n".join(problems)


def test_talk_mode_starts_with_the_sidebar_collapsed(talk_page: Page, streamlit_server: StreamlitServer) -> None:
    page = talk_page
    goto(page, streamlit_server, "/walkthrough?talk=1")
    sidebar = page.locator("[data-testid='stSidebar']")
    assert sidebar.get_attribute("data-collapsed") == "true"
    page.locator("[data-testid='stExpandSidebarButton']").click()  # the presenter can open it again
    page.wait_for_function(
        "() => document.querySelector(\"[data-testid='stSidebar']\").getAttribute('data-collapsed') === 'false'"
    )
