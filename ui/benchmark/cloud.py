"""Streamlit Community Cloud: whether the app runs there, and the smaller limits it needs.

A deployment concern, so it lives with the page, not in the core: the core takes the memory
ceiling as a number (:func:`attention_core.bench.default_cap_bytes`).
"""

from __future__ import annotations

import os
from pathlib import Path

CLOUD_ENV = "ATTENTION_CLOUD"
CLOUD_CAP_BYTES = 640 * 2**20  # Community Cloud gives ≈ 2.7 GB in all, and the app itself needs ≈ 1 GB


def running_on_streamlit_cloud() -> bool:
    """``$ATTENTION_CLOUD`` (1/0) decides when set; otherwise two public markers of Community Cloud's
    containers: the host name ``streamlit`` and the repository mounted under ``/mount/src``."""
    override = os.environ.get(CLOUD_ENV, "").strip().lower()
    if override in ("1", "true", "yes", "on"):
        return True
    if override in ("0", "false", "no", "off"):
        return False
    return os.environ.get("HOSTNAME", "") == "streamlit" or Path("/mount/src").is_dir()


def cap_ceiling(device: str) -> int | None:
    """The most one configuration may use on ``device``: 640 MiB of the CPU on Community Cloud, else no limit."""
    return CLOUD_CAP_BYTES if device == "cpu" and running_on_streamlit_cloud() else None


ON_CLOUD = running_on_streamlit_cloud()
