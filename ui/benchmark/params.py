"""The benchmark page's ranges and defaults, and the smaller limits Streamlit Community Cloud needs (a deployment
concern, so it lives with the page: the core takes the memory ceiling as a number)."""

from __future__ import annotations

import os
from pathlib import Path

from attention_core import bench
from attention_core.device import available_devices
from ui import links
from ui.device import DEVICE

CLOUD_CAP_BYTES = 640 * 2**20  # Community Cloud gives ≈ 2.7 GB in all, and the app itself needs ≈ 1 GB


def running_on_streamlit_cloud() -> bool:
    """``$ATTENTION_CLOUD`` (1/0) decides when set; otherwise two public markers of Community Cloud's
    containers: the host name ``streamlit`` and the repository mounted under ``/mount/src``."""
    override = links.on_off(os.environ.get("ATTENTION_CLOUD", "").strip())
    if override is not None:
        return override == "true"
    return os.environ.get("HOSTNAME", "") == "streamlit" or Path("/mount/src").is_dir()


def cap_ceiling(device: str) -> int | None:
    """The most one configuration may use on ``device``: 640 MiB of the CPU on Community Cloud, else no limit."""
    return CLOUD_CAP_BYTES if device == "cpu" and running_on_streamlit_cloud() else None


ON_CLOUD = running_on_streamlit_cloud()
N_OPTIONS = tuple(2**p for p in range(7, 14 if ON_CLOUD else 16))  # 128 … 8192 on Community Cloud, else … 32768
D_OPTIONS = (16, 32, 64, 128)
DEVICES = tuple(available_devices())
DEFAULT_DEVICE = DEVICE if DEVICE in DEVICES else "cpu"  # a device with an index (cuda:1) is not a choice
DEFAULT = bench.DEFAULT_SWEEP
BUDGET_MAX = 60 if ON_CLOUD else 600  # seconds
