"""The app in a real browser: Debian's Chromium, driven by Playwright, against `streamlit run`.

Each test opens its own browser context (so its own Streamlit session) on one shared server; the
``page`` fixture also checks that the server is still healthy and logged no uncaught exception.
Screenshots of every page, at 1400×1000 and in talk mode at 1280×720, are saved as artefacts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.browser import (
    ALERT,
    PHONE_VIEWPORT,
    TALK_VIEWPORT,
    StreamlitServer,
    exception_texts,
    goto,
    rerun,
    screenshot,
    start_server,
    wait_idle,
)

if TYPE_CHECKING:  # Playwright is imported lazily, so a machine without it skips (or, in CI, fails)
    from playwright.sync_api import Browser, Locator, Page

pytestmark = pytest.mark.browser

# URL path of each page, and a text its body must show once it has rendered.
PAGES = {
    "home": ("/", "Scaled dot-product attention"),
    "walkthrough": ("/walkthrough", "The five steps of attention"),
    "scaling": ("/scaling", "√d_k explorer"),
    "benchmark": ("/benchmark", "Benchmark"),
    "decoder": ("/decoder", "A model that writes"),
    "induction": ("/induction", "Watch it learn"),
}

# A sweep that takes a few seconds: two implementations at the smallest n, one small head.
TINY_SWEEP = "bm_impl=sdpa&bm_impl=textbook&bm_nmin=128&bm_nmax=128&bm_d=16&bm_heads=1&bm_batch=1&bm_budget=5"


def query(page: Page) -> dict[str, str]:
    """The current URL's query string as a flat dict (last value wins, as in the app)."""
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def main_text(page: Page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


@pytest.mark.parametrize("name", list(PAGES))
def test_page_loads_without_exception(
    name: str, page: Page, streamlit_server: StreamlitServer, artifacts_dir: Path
) -> None:
    path, expected = PAGES[name]
    goto(page, streamlit_server, path)
    assert exception_texts(page) == []
    assert expected.lower() in main_text(page).lower()
    screenshot(page, artifacts_dir, name)

    page.set_viewport_size(TALK_VIEWPORT)
    goto(page, streamlit_server, f"{path}?talk=1")  # a link from before the widgets were bound to the URL
    assert exception_texts(page) == []
    page.wait_for_url(lambda url: "talk=true" in url, timeout=20_000)  # rewritten in today's form, and kept
    screenshot(page, artifacts_dir, f"{name}-talk")


def _next_button(page: Page) -> Locator:
    return page.get_by_role("button", name=re.compile(r"^\s*Next\b"))


def test_walkthrough_steps_from_0_to_5_by_clicking_next(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, "/walkthrough")
    assert "step" not in query(page)
    for step in range(1, 6):
        rerun(page, lambda: _next_button(page).click())
        assert exception_texts(page) == [], f"exception after Next to step {step}"
        assert query(page).get("step") == str(step)
        shown = page.locator(".st-key-step [data-testid='stSliderThumbValue']").inner_text()
        assert shown == str(step), f"the step control shows {shown!r}"
        assert page.get_by_role("heading", name=re.compile(rf"^{step}\. ")).count() == 1, f"no heading for step {step}"
    assert _next_button(page).is_disabled(), "Next must stop at the last step"


def test_walkthrough_arrow_keys_step_back_and_forth(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, "/walkthrough")
    _next_button(page).wait_for(state="visible")
    page.evaluate("document.activeElement && document.activeElement.blur()")  # keys go to the page
    for key, step in [("ArrowRight", "1"), ("ArrowRight", "2"), ("ArrowLeft", "1")]:
        rerun(page, lambda key=key: page.keyboard.press(key))
        assert query(page).get("step") == step, f"after {key}"
    assert exception_texts(page) == []


def _choose(page: Page, key: str, index: int) -> str:
    """Open the selectbox keyed ``key`` and pick its option number ``index``; return the option's text."""
    page.locator(f".st-key-{key} [data-testid='stSelectbox']").click()
    option = page.get_by_role("option").nth(index)
    text = option.inner_text().strip()
    rerun(page, option.click)
    return text


def _selectbox_shows(page: Page, key: str) -> str:
    """The option a selectbox shows (1.67 renders it as the value of a combobox input)."""
    return page.locator(f".st-key-{key} [data-testid='stSelectbox'] input[role='combobox']").input_value().strip()


def test_copied_url_restores_the_selectbox_choice(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, "/walkthrough")
    before = _selectbox_shows(page, "preset")
    chosen = _choose(page, "preset", 1)  # options: tiny, sentence, random
    shown = _selectbox_shows(page, "preset")
    assert shown == chosen != before
    assert query(page).get("preset") == chosen  # the link names a choice as the control shows it
    copied = page.url

    other = page.context.browser.new_context(viewport=TALK_VIEWPORT)
    try:
        tab = other.new_page()
        tab.goto(copied, wait_until="domcontentloaded")
        wait_idle(tab)
        assert _selectbox_shows(tab, "preset") == shown
        assert query(tab).get("preset") == chosen
        assert exception_texts(tab) == []
    finally:
        other.close()


def test_malformed_url_shows_a_notice_and_no_exception(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, "/walkthrough?n=1000000000&d_k=-3&mask=%3Cscript%3E&zzz=1")
    assert exception_texts(page) == []
    alerts = page.locator(f"{ALERT} [data-testid='stMarkdownContainer']").all_inner_texts()
    notices = [t for t in alerts if t.strip().startswith("This link asked for")]
    assert len(notices) == 1, alerts
    assert "<script>" not in notices[0]
    for key in ("n =", "d_k =", "mask ="):
        assert key in notices[0]
    assert "zzz" not in notices[0], "a key no control reads changes nothing and is not complained about"


@pytest.mark.parametrize(("viewport", "side_by_side"), [(PHONE_VIEWPORT, False), (TALK_VIEWPORT, True)],
                         ids=["phone", "talk"])  # fmt: skip
def test_scaling_panels_stack_on_a_phone_and_sit_side_by_side_in_talk_mode(
    browser: Browser, streamlit_server: StreamlitServer, artifacts_dir: Path, viewport: dict[str, int],
    side_by_side: bool,
) -> None:
    """The saturation tab's two panels are two charts in st.columns: full width one above the other on a phone, in
    one row at 1280×720 (talk mode), where both fit the window."""
    context = browser.new_context(viewport=viewport)
    try:
        page = context.new_page()
        goto(page, streamlit_server, "/scaling?sc_tab=Saturation&sc_nk=4" + ("&talk=true" if side_by_side else ""),
             timeout=120_000)  # fmt: skip
        boxes = [page.locator(f".st-key-sc_saturation_{c}").bounding_box() for c in ("entropy_pct", "max_weight")]
        screenshot(page, artifacts_dir, f"scaling-panels-{viewport['width']}")
        first, second = boxes
        assert first is not None and second is not None
        if side_by_side:
            assert abs(first["y"] - second["y"]) < 2 and second["x"] >= first["x"] + first["width"]
            assert second["y"] + second["height"] <= viewport["height"], "the panels must fit the talk window"
        else:
            assert second["y"] >= first["y"] + first["height"]
            assert min(first["width"], second["width"]) > 0.8 * viewport["width"], "a stacked panel gets the width"
    finally:
        context.close()


def test_every_scaling_tab_renders(page: Page, streamlit_server: StreamlitServer, artifacts_dir: Path) -> None:
    goto(page, streamlit_server, "/scaling")
    labels = [t.strip() for t in page.get_by_role("tab").all_inner_texts()]
    assert len(labels) >= 2, labels
    for i, label in enumerate(labels):
        if i > 0:  # the tabs rerun the script (on_change="rerun"): only the open tab is computed
            rerun(page, page.get_by_role("tab", name=label, exact=True).click, timeout=120_000)
        assert exception_texts(page) == [], f"exception on the {label} tab"
        panel = page.get_by_role("tabpanel").filter(visible=True)
        assert panel.count() == 1
        assert panel.locator("[data-testid='stElementContainer']").count() > 0, f"the {label} tab is empty"
        assert i == 0 or query(page).get("sc_tab") == label, "the open tab must be in the URL"
        screenshot(page, artifacts_dir, f"scaling-tab{i}")
    # The browser writes a changed control into the link (AppTest does not see this), and the link restores it.
    assert labels[-1] == "Training"
    rerun(page, page.locator(".st-key-sc_opt").get_by_text("SGD", exact=True).click, timeout=120_000)
    assert {k: query(page).get(k) for k in ("sc_tab", "sc_opt", "sc_lr")} == {
        "sc_tab": "Training", "sc_opt": "SGD", "sc_lr": "0.3"
    }, "the optimizer and the learning rate it resets to must be in the URL"  # fmt: skip
    goto(page, streamlit_server, urlsplit(page.url)._replace(scheme="", netloc="").geturl())
    assert exception_texts(page) == [] and page.locator(ALERT).count() == 0
    assert page.locator(".st-key-sc_opt input:checked").get_attribute("value") in ("1", "SGD")


def test_benchmark_runs_a_tiny_sweep_and_shows_the_table(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, f"/benchmark?{TINY_SWEEP}")
    assert "2 configurations" in main_text(page)
    assert parse_qs(urlsplit(page.url).query)["bm_impl"] == ["sdpa", "textbook"]  # a list: the parameter repeated
    rerun(page, page.locator(".st-key-bm_run button").click, timeout=180_000)
    assert exception_texts(page) == []
    captions = page.locator("[data-testid='stCaptionContainer']").all_inner_texts()
    assert any(c.startswith("2 configurations, forward · d = 16, 1 heads") for c in captions), captions
    page.get_by_role("tab", name="Table").click()  # these tabs switch in the browser, without a rerun
    table = page.locator("[data-testid='stTabs'] [data-testid='stDataFrame']")
    table.first.wait_for(state="visible")
    assert table.count() == 1


def test_a_bookmark_opened_first_on_a_fresh_server_gets_the_whole_app(browser: Browser, artifacts_dir: Path) -> None:
    """The instructor's case: the app was asleep (or just deployed) and the first visit is a bookmark.

    The entry script must run (navigation, the sidebar frame, talk mode), not the page file alone.
    """
    server = start_server(artifacts_dir / "streamlit-fresh.log")
    context = browser.new_context(viewport=TALK_VIEWPORT)
    try:
        tab = context.new_page()
        goto(tab, server, "/walkthrough?talk=1&step=2")
        assert exception_texts(tab) == []
        nav = tab.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
        labels = [t.strip().splitlines()[-1] for t in nav]  # the line before is the icon's name
        assert labels[:2] == ["Home", "Walkthrough"], labels
        assert tab.locator(".st-key-talk input").is_checked(), "the frame's talk toggle is missing or off"
        assert query(tab).get("step") == "2"
        screenshot(tab, artifacts_dir, "walkthrough-fresh-bookmark")
    finally:
        context.close()
        server.stop()


def test_talk_mode_is_written_to_the_url_and_dropped_when_off(page: Page, streamlit_server: StreamlitServer) -> None:
    goto(page, streamlit_server, "/walkthrough?step=1")
    switch = page.locator(".st-key-talk label")
    rerun(page, switch.click)
    assert query(page).get("talk") == "true" and query(page).get("step") == "1"
    page.locator("[data-testid='stExpandSidebarButton']").click()  # talk mode folds the sidebar away
    rerun(page, switch.click)
    assert "talk" not in query(page) and query(page).get("step") == "1"
