"""Shared fixtures: the device parametrisation of the core tests, a page of the app opened by its link (AppTest),
and the real browser (Chromium through Playwright, against one `streamlit run` per session).

Browser tests take the ``streamlit_server`` and ``page`` fixtures. When Playwright or Chromium is missing they
skip locally and FAIL when ``CI=true``; every such reason starts with "browser:" so CI can refuse a run where
they were skipped. ``ARTIFACTS_DIR`` is where screenshots and the server log go (default: a temporary folder).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.support.browser import (
    VIEWPORT,
    StreamlitServer,
    browser_missing,
    chromium_path,
    launch_chromium,
    start_server,
)
from tests.support.widgets import open_page as open_app_page

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright



DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available"),
    ),
]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> torch.device:
    """Each test that takes ``device`` runs on the CPU and, where present, on CUDA."""
    return torch.device(request.param)


@pytest.fixture
def open_page() -> Callable[..., AppTest]:
    """``open_page("walkthrough", {"preset": "Random"})``: the page run once from that link (see open_app_page)."""
    return open_app_page


def unavailable(reason: str) -> None:
    """Skip locally, fail in CI: the browser suite must really run there."""
    message = f"browser: {reason}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def artifacts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Screenshots and the server log: $ARTIFACTS_DIR if set, else a pytest temporary folder."""
    env = os.environ.get("ARTIFACTS_DIR")
    if env:
        path = Path(env) / "browser"
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("browser-artifacts")


@pytest.fixture(scope="session")
def playwright_instance() -> Iterator[Playwright]:
    reason = browser_missing()
    if reason:
        unavailable(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance: Playwright) -> Iterator[Browser]:
    try:
        b = launch_chromium(playwright_instance)
    except Exception as exc:  # a broken or incompatible binary: same policy as a missing one
        unavailable(f"Chromium at {chromium_path()} did not start: {exc}")
    yield b
    b.close()


@pytest.fixture(scope="session")
def streamlit_server(artifacts_dir: Path, browser: Browser) -> Iterator[StreamlitServer]:
    """One app server for the whole session (it depends on ``browser`` so a skip costs nothing)."""
    server = start_server(artifacts_dir / "streamlit.log")
    yield server
    server.stop()


@pytest.fixture
def page(browser: Browser, streamlit_server: StreamlitServer) -> Iterator[Page]:
    """A fresh browser context (its own Streamlit session) at 1400×1000.

    After the test, the server must still be healthy and must not have logged an uncaught
    exception while the test ran.
    """
    mark = streamlit_server.log_mark()
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(20_000)  # page loads and reruns pass their own, longer, timeouts
    p = context.new_page()
    yield p
    context.close()
    assert streamlit_server.healthy(), "the Streamlit server stopped answering its health check"
    assert not streamlit_server.logged_errors(mark), "\n".join(streamlit_server.logged_errors(mark))
