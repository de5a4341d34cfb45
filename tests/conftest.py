"""Shared fixtures: the device parametrisation used by every core test, and a page of the app opened by its link."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]

# The real-browser fixtures (streamlit_server, browser, page, artifacts_dir) live in their own module.
pytest_plugins = ("browser_harness",)

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


def open_app_page(page: str, query: dict[str, str] | None = None, *, timeout: float = 120) -> AppTest:
    """``app.py`` opened at ``app_pages/<page>.py`` by a link with ``query``, run once, as a browser would."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.query_params.update(query or {})
    if page != "home":
        at.switch_page(f"app_pages/{page}.py")
    return at.run()


@pytest.fixture
def open_page() -> Callable[..., AppTest]:
    """``open_page("walkthrough", {"preset": "Random"})``: the page run once from that link (see open_app_page)."""
    return open_app_page
