"""Shared fixtures: the device parametrisation used by every core test."""

from __future__ import annotations

import pytest
import torch

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
