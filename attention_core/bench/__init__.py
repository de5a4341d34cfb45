"""The O(n²) benchmark: what attention costs on this CPU or GPU, measured honestly.

Layered one way, each module importing only those before it: :mod:`.config` (the shared words: a
measurement, an entry, dtypes, modes), :mod:`.memory_models`, :mod:`.routes` and :mod:`.impls` (the
registry), :mod:`.passes`, :mod:`.measure`, :mod:`.run` (one configuration), :mod:`.checks` (against
float64), :mod:`.sweep`, :mod:`.fits`, :mod:`.isolated` (peak memory in a fresh process) and :mod:`.cli`.
It is a package so that ``python -m attention_core.bench`` runs ``__main__`` without importing it twice.
"""

from ..device import format_bytes
from .checks import CHECK_N, correctness_error, gradient_check
from .cli import format_table, main
from .config import MODE_NAMES, MODES, RENAMED, BenchConfig, Impl, flop_formula
from .fits import FIT_MIN_N, crossover_n, fit_loglog_slope, growth_start, scaling_fits
from .impls import EXACT, IMPLEMENTATIONS, get_impl, make_inputs, sdpa_choice
from .isolated import fresh_process_peak
from .measure import (
    cpu_load_per_core,
    default_cap_bytes,
    environment,
    flop_table,
    free_memory_bytes,
    guard_reason,
    largest_fitting_n,
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
    PlannedConfig,
    SweepProgress,
    SweepResult,
    SweepSpec,
    plan,
    run_sweep,
)
