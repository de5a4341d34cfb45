"""Run configurations one after another (:func:`.run.run_config`): n outermost, under a time budget, cancellable,
reusing rows; :func:`plan` says what would be refused without running anything."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..validation import check_float, check_int, check_int_list
from .checks import approximation_note, correctness_error, gradient_check
from .config import BenchConfig, Shape
from .impls import get_impl
from .measure import cpu_load_per_core, default_cap_bytes, environment, guard_reason, matmul_peak_gflops
from .run import BenchResult, _result, run_config

DISTURBED_LOAD_PER_CORE = 1.5  # runnable tasks per core above which timings are not to be trusted


@dataclass(frozen=True)
class SweepSpec(Shape):
    """A grid of configurations: every implementation at every n, on one :class:`.config.Shape` (keywords)."""

    impls: tuple[str, ...] = ("textbook", "trace", "sdpa", "tiled")
    ns: tuple[int, ...] = (128, 256, 512, 1024, 2048)
    device: str = field(default="auto", kw_only=True)  # the shape's, defaulting to the best device here

    def configs(self) -> list[BenchConfig]:
        """n outermost, so a sweep stopped early still compares every implementation."""
        if not self.impls:
            raise ValueError("choose at least one implementation")
        for name in self.impls:
            get_impl(name)
        ns = sorted(set(check_int_list("ns", self.ns, low=1)))
        return [BenchConfig(name, n, **self.shape()) for n in ns for name in dict.fromkeys(self.impls)]


DEFAULT_SWEEP = SweepSpec()
DEFAULT_BUDGET_S = 18.0  # the default sweep must finish within 20 s on 2 CPU cores
DEFAULT_MIN_RUN_TIME = 0.1


@dataclass(frozen=True)
class SweepProgress:
    """Passed to the progress callback before (``result is None``) and after each configuration."""

    done: int
    total: int
    config: BenchConfig
    result: BenchResult | None


@dataclass
class SweepResult:
    rows: list[BenchResult]
    wall_s: float
    peak_gflops: float | None
    stopped: str | None = None  # "cancelled" or "budget" when the sweep ended early
    env: dict[str, str] = field(default_factory=dict)
    load_per_core: float | None = None  # 1-minute load average ÷ cores when the sweep started

    @property
    def disturbed(self) -> bool:
        """Other work was competing for the cores when the sweep started, so timings are suspect."""
        return self.load_per_core is not None and self.load_per_core > DISTURBED_LOAD_PER_CORE


def run_sweep(spec: SweepSpec = DEFAULT_SWEEP, *, cap_bytes: int | None = None,
              budget_s: float | None = DEFAULT_BUDGET_S, min_run_time: float = DEFAULT_MIN_RUN_TIME,
              should_stop: Callable[[], bool] | None = None, progress: Callable[[SweepProgress], None] | None = None,
              check_correctness: bool = True,
              cached: Callable[[BenchConfig], BenchResult | None] | None = None) -> SweepResult:  # fmt: skip
    """Run every configuration of ``spec`` in order and return the rows.

    Stops cleanly when ``should_stop()`` turns true (the rest ``cancelled``) or ``budget_s`` is used up; a
    configuration the budget cannot cover (the implementation's last time scaled as n²) is ``skipped``, not started.
    ``cached(config)`` may return an earlier result to reuse instead of measuring.
    """
    configs = spec.configs()
    load = cpu_load_per_core()
    if budget_s is not None:
        budget_s = check_float("budget_s", budget_s, low=0.0, low_open=True)
    min_run_time = check_float("min_run_time", min_run_time, low=0.0)
    start = time.perf_counter()
    deadline = None if budget_s is None else start + budget_s
    peak = matmul_peak_gflops(configs[0].device, configs[0].dtype)
    checks: dict[str, dict[str, Any]] = {}  # impl -> its checks at a small n, added to its ok rows
    last_ok: dict[str, tuple[int, float]] = {}  # impl -> (n, seconds per call)
    warmed: set[str] = set()
    rows: list[BenchResult] = []
    stopped: str | None = None

    for i, config in enumerate(configs):
        if progress:
            progress(SweepProgress(i, len(configs), config, None))
        reuse = cached(config) if cached else None
        predicted = int(get_impl(config.impl).predicted_bytes(config))
        if reuse is not None:
            row = reuse
        elif stopped == "cancelled" or (should_stop is not None and should_stop()):
            stopped = "cancelled"
            row = _result(config, predicted, "cancelled", "the sweep was cancelled")
        elif (why := _over_budget(config, last_ok, deadline, budget_s, min_run_time)) is not None:
            stopped = stopped or ("budget" if why.startswith("the time budget") else None)
            row = _result(config, predicted, "skipped", why)
        else:
            if check_correctness and config.impl not in checks:
                checks[config.impl] = {"max_error": correctness_error(config), "note": approximation_note(config)}
                check = gradient_check(config) if config.backward else None
                checks[config.impl].update(check.errors if check is not None else {})  # err_dq, err_dk, err_dv
            row = run_config(config, cap_bytes=cap_bytes, min_run_time=min_run_time, deadline=deadline,
                             peak_gflops=peak, warm_up=config.impl not in warmed)  # fmt: skip
            if row.status == "ok":
                warmed.add(config.impl)
                row = replace(row, **checks.get(config.impl, {}))
        if row.status == "ok" and row.median_ms is not None:
            last_ok[config.impl] = (config.n, row.median_ms / 1e3)
        rows.append(row)
        if progress:
            progress(SweepProgress(i + 1, len(configs), config, row))
    env = environment(configs[0].device, cap_bytes=cap_bytes)
    return SweepResult(rows, time.perf_counter() - start, peak, stopped, env, load)


def _over_budget(config: BenchConfig, last_ok: dict[str, tuple[int, float]], deadline: float | None,
                 budget_s: float | None, min_run_time: float) -> str | None:  # fmt: skip
    if deadline is None:
        return None
    left = deadline - time.perf_counter()
    if left <= 0:
        return f"the time budget of {budget_s:g} s was used up"
    if config.impl in last_ok:
        n_prev, t_prev = last_ok[config.impl]
        per_call = t_prev * (config.n / n_prev) ** 2
        calls = 5 if config.mode == "bwd" else 4  # memory-measured call, three timed calls (bwd: and a forward)
        expected = calls * per_call + min_run_time
        if expected > left:
            return f"would take about {expected:.0f} s; {left:.0f} s of the {budget_s:g} s budget is left"
    return None


@dataclass(frozen=True)
class PlannedConfig:
    """A configuration before it runs, and why it will not run (if so)."""

    config: BenchConfig
    refusal: str | None


def plan(spec: SweepSpec, cap_bytes: int | None = None) -> list[PlannedConfig]:
    """What :func:`run_sweep` would do about memory, without running anything."""
    configs = spec.configs()
    cap = default_cap_bytes(configs[0].device) if cap_bytes is None else check_int("cap_bytes", cap_bytes, low=1)
    return [PlannedConfig(c, (impl := get_impl(c.impl)).cannot_run(c) or guard_reason(impl.guard_bytes(c), cap))
            for c in configs]
