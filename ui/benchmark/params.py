"""The benchmark page's choices and URL parameters: the sweep's ranges and their defaults."""

from __future__ import annotations

import math

from attention_core import available_devices, bench, default_device
from ui.benchmark.cloud import ON_CLOUD
from ui.params import BoolParam, ChoiceParam, IntParam, MultiChoiceParam

N_MIN = 128
N_MAX = 8192 if ON_CLOUD else 32768
N_OPTIONS = tuple(2**p for p in range(int(math.log2(N_MIN)), int(math.log2(N_MAX)) + 1))
D_OPTIONS = (16, 32, 64, 128)
DEVICES = tuple(available_devices())
DEFAULT = bench.DEFAULT_SWEEP


IMPLS = MultiChoiceParam("bm_impl", DEFAULT.impls, tuple(bench.IMPLEMENTATIONS), label="implementations")
N_FROM = IntParam("bm_nmin", DEFAULT.ns[0], N_MIN, N_MAX, label="smallest n")
N_TO = IntParam("bm_nmax", min(DEFAULT.ns[-1], N_MAX), N_MIN, N_MAX, label="largest n")
D = IntParam("bm_d", DEFAULT.d, D_OPTIONS[0], D_OPTIONS[-1], label="d")
HEADS = IntParam("bm_heads", DEFAULT.heads, 1, 16, label="heads")
BATCH = IntParam("bm_batch", DEFAULT.batch, 1, 8, label="batch")
DTYPE = ChoiceParam("bm_dtype", DEFAULT.dtype, ("float32", "bfloat16", "float16"), label="dtype")
CAUSAL = BoolParam("bm_causal", DEFAULT.causal, label="causal")
DEVICE = ChoiceParam("bm_device", str(default_device()), DEVICES, label="device")
BUDGET = IntParam("bm_budget", 20, 5, 60 if ON_CLOUD else 600, label="time budget")
PARAMS = [IMPLS, N_FROM, N_TO, D, HEADS, BATCH, DTYPE, CAUSAL, DEVICE, BUDGET]
