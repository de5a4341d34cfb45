"""Eight viewers press Run on the benchmark at once, in one real browser (8 contexts = 8 sessions).

The page promises one benchmark at a time per server (a lock in ``st.cache_resource``): the others
wait in line with a visible "Busy, queued" status. Here we check what a viewer sees:
- the server stays up (its health endpoint answers) and logs no uncaught exception;
- every tab ends with results, or a clear "busy, queued" or "cancelled" state, and no exception box;
- someone was seen queued, so the runs really were serialised rather than overlapping.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from tests.support.browser import VIEWPORT, StreamlitServer, exception_texts, wait_idle

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

TABS = 8
# Twelve configurations not measured by any other test (d = 32), so the first run really measures, and
# for long enough (two seconds and more: n reaches 4096) that the other tabs' clicks land while it holds
# the lock. With two configurations the first run could end before the next click was handled (CI run 18
# of a fresh clone), and with ten up to n = 2048 it did once more on a quiet fresh clone.
SWEEP = "bm_impl=sdpa&bm_impl=textbook&bm_nmin=128&bm_nmax=4096&bm_d=32&bm_heads=1&bm_batch=1&bm_budget=30"
RESULTS = re.compile(r"^12 configurations, forward · d = 32, 1 heads")
WAITING = re.compile(r"busy, queued|still busy", re.IGNORECASE)
CANCELLED = re.compile(r"cancelled|was stopped after", re.IGNORECASE)

# Remember, in the page itself, whether the queue notice was ever on screen (it is gone at the end).
_WATCH_QUEUE = """() => {
    window.__sawQueued = false;
    new MutationObserver(() => {
        if (/Busy, queued/.test(document.body.innerText)) window.__sawQueued = true;
    }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def final_state(tab: Page) -> str:
    """ "results", "queued" or "cancelled" — or what the tab shows instead, for the failure message."""
    captions = tab.locator("[data-testid='stCaptionContainer']").all_inner_texts()
    if any(RESULTS.search(c) for c in captions):
        return "results"
    text = tab.locator("[data-testid='stMain']").inner_text()
    if WAITING.search(text):
        return "queued"
    if CANCELLED.search(text):
        return "cancelled"
    return "unclear: " + " | ".join(captions)[:300]


def test_eight_tabs_press_run_at_once(browser: Browser, streamlit_server: StreamlitServer) -> None:
    mark = streamlit_server.log_mark()
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(TABS)]
    try:
        tabs = [c.new_page() for c in contexts]
        for tab in tabs:  # start every load first, then wait: the eight pages load side by side
            tab.goto(streamlit_server.url(f"/benchmark?{SWEEP}"), wait_until="commit")
        for tab in tabs:
            wait_idle(tab, timeout=120_000)
            assert exception_texts(tab) == []
            tab.evaluate(_WATCH_QUEUE)

        for tab in tabs:
            tab.locator(".st-key-bm_run button").click()
        for tab in tabs:
            wait_idle(tab, timeout=180_000)
            assert streamlit_server.healthy(), "the server stopped answering while the runs were queued"

        states = [final_state(tab) for tab in tabs]
        assert all(s in ("results", "queued", "cancelled") for s in states), states
        assert [exception_texts(tab) for tab in tabs] == [[]] * TABS
        assert any(tab.evaluate("() => window.__sawQueued") for tab in tabs), (
            "no tab ever showed 'Busy, queued': the eight runs were not serialised by the lock"
        )
    finally:
        for c in contexts:
            c.close()
    assert streamlit_server.healthy()
    assert not streamlit_server.logged_errors(mark), streamlit_server.logged_errors(mark)
