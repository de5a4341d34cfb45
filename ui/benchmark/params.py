"""The benchmark page's choices: the sweep's ranges and their defaults (the controls name them in the URL)."""

from __future__ import annotations

import math

from attention_core import bench
from attention_core.device import available_devices
from ui.benchmark.cloud import ON_CLOUD
from ui.device import DEVICE

N_MIN = 128
N_MAX = 8192 if ON_CLOUD else 32768
N_OPTIONS = tuple(2**p for p in range(int(math.log2(N_MIN)), int(math.log2(N_MAX)) + 1))
D_OPTIONS = (16, 32, 64, 128)
DEVICES = tuple(available_devices())
DEFAULT_DEVICE = DEVICE if DEVICE in DEVICES else "cpu"  # a device with an index (cuda:1) is not a choice
DEFAULT = bench.DEFAULT_SWEEP
BUDGET_MAX = 60 if ON_CLOUD else 600  # seconds
