"""The O(n²) benchmark: what attention costs on this CPU or GPU, measured honestly.

- :mod:`.impls`: the registry of implementations (naive, sdpa and its forced kernels, tiled, numpy);
- :mod:`.measure`: timing, peak memory, the matmul rate, the memory cap and tables;
- :mod:`.sweep`: running configurations with a memory guard, a time budget and fits;
- :mod:`.runlock`: one run at a time per server, and the rows measured so far;
- :mod:`.cli`: ``python -m attention_core.bench``.

It is a package rather than one module so that ``python -m attention_core.bench`` runs
``__main__`` without the module being imported twice.
"""

from .cli import format_table, main
from .impls import (
    DTYPES,
    IMPLEMENTATIONS,
    BenchConfig,
    Impl,
    get_impl,
    make_inputs,
    naive_extra_bytes,
    numpy_attention,
    reference_attention,
    sdpa_choice,
)
from .measure import (
    TABLE_NS,
    Timing,
    default_cap_bytes,
    environment,
    flop_table,
    format_bytes,
    free_memory_bytes,
    guard_reason,
    largest_fitting_n,
    matmul_peak_gflops,
    measure_peak_extra,
    memory_table,
    running_on_streamlit_cloud,
    score_matrix_bytes,
    time_call,
)
from .runlock import BenchLock
from .sweep import (
    CSV_COLUMNS,
    DEFAULT_BUDGET_S,
    DEFAULT_MIN_RUN_TIME,
    DEFAULT_SWEEP,
    STATUSES,
    BenchResult,
    PlannedConfig,
    ScalingFit,
    SweepProgress,
    SweepResult,
    SweepSpec,
    correctness_error,
    fit_loglog_slope,
    is_oom,
    plan,
    result_dicts,
    run_config,
    run_sweep,
    scaling_fits,
    speedups,
    write_csv,
)

__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_BUDGET_S",
    "DEFAULT_MIN_RUN_TIME",
    "DEFAULT_SWEEP",
    "DTYPES",
    "IMPLEMENTATIONS",
    "STATUSES",
    "TABLE_NS",
    "BenchConfig",
    "BenchLock",
    "BenchResult",
    "Impl",
    "PlannedConfig",
    "ScalingFit",
    "SweepProgress",
    "SweepResult",
    "SweepSpec",
    "Timing",
    "correctness_error",
    "default_cap_bytes",
    "environment",
    "fit_loglog_slope",
    "flop_table",
    "format_bytes",
    "format_table",
    "free_memory_bytes",
    "get_impl",
    "guard_reason",
    "is_oom",
    "largest_fitting_n",
    "main",
    "make_inputs",
    "matmul_peak_gflops",
    "measure_peak_extra",
    "memory_table",
    "naive_extra_bytes",
    "numpy_attention",
    "plan",
    "reference_attention",
    "result_dicts",
    "run_config",
    "run_sweep",
    "running_on_streamlit_cloud",
    "scaling_fits",
    "score_matrix_bytes",
    "sdpa_choice",
    "speedups",
    "time_call",
    "write_csv",
]
