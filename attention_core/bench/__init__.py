"""The O(n²) benchmark: what attention costs on this CPU or GPU, measured honestly.

- :mod:`.config`: the shared words, imported by every other module: one measurement
  (:class:`BenchConfig`: what, on which shape, in which mode), an entry (:class:`Impl`), dtypes, modes;
- :mod:`.impls`: the registry of implementations (textbook, trace, sdpa and its forced kernels, tiled,
  numpy, tiled-triton) and their inputs, with the efficient routes of :mod:`.routes` (sdpa-masked,
  flex-window, linear, performer, linformer), which approximate attention and say by how much;
- :mod:`.memory_models`: the bytes each implementation and route needs at its peak, forward and in training;
- :mod:`.passes`: the call each mode times: the forward, the backward on its own, or both;
- :mod:`.measure`: timing, peak memory, the matmul rate, the memory cap and tables;
- :mod:`.run`: one configuration measured behind a memory guard, its result row, and the CSV;
- :mod:`.checks`: each implementation's output and gradients against float64 at a small n;
- :mod:`.sweep`: a grid of configurations run in order under a time budget;
- :mod:`.fits`: how time and memory grow with n (log-log slopes, launch-bound sizes, crossovers);
- :mod:`.isolated`: peak memory measured in a fresh worker process, independent of history;
- :mod:`.cli`: ``python -m attention_core.bench``.

It is a package rather than one module so that ``python -m attention_core.bench`` runs
``__main__`` without the module being imported twice.
"""

from ..device import format_bytes
from .checks import CHECK_N, approximation_note, correctness_error, gradient_check
from .cli import format_table, main
from .config import DTYPES, MODE_NAMES, MODES, RENAMED, BenchConfig, Impl, Shape, flop_formula
from .fits import FIT_MIN_N, ScalingFit, crossover_n, fit_loglog_slope, growth_start, scaling_fits
from .impls import EXACT, IMPLEMENTATIONS, get_impl, make_inputs, sdpa_choice
from .isolated import fresh_process_peak
from .measure import (
    Timing,
    cpu_load_per_core,
    default_cap_bytes,
    environment,
    flop_table,
    free_memory_bytes,
    guard_reason,
    largest_fitting_n,
    matmul_peak_gflops,
    measure_peak_extra,
    memory_table,
    score_matrix_bytes,
    time_call,
)
from .memory_models import math_extra_bytes, textbook_extra_bytes
from .passes import grad_out, leaves, timed_pass
from .routes import ROUTES, RouteParams, parse_route
from .run import (
    CSV_COLUMNS,
    MIN_SAMPLES,
    NOT_AVAILABLE,
    BenchResult,
    run_config,
    speedups,
    write_csv,
)
from .sweep import (
    DEFAULT_BUDGET_S,
    DEFAULT_MIN_RUN_TIME,
    DEFAULT_SWEEP,
    DISTURBED_LOAD_PER_CORE,
    PlannedConfig,
    SweepProgress,
    SweepResult,
    SweepSpec,
    plan,
    run_sweep,
)
