"""Run configurations one after another: guard, warm up, measure, check, record.

Each configuration ends as one :class:`BenchResult` whose ``status`` says what happened:

- ``ok``: timed and measured;
- ``n/a``: the implementation cannot run on this device, dtype or shape (the note says why; a
  forced SDPA kernel that refuses the inputs says "not available for these inputs: <torch's reason>");
- ``skipped``: the memory guard or the time budget refused it before anything was allocated;
- ``oom``: it was tried and ran out of memory;
- ``cancelled``: the caller asked the sweep to stop;
- ``error``: anything else torch raised, with its first line as the note.
"""

from __future__ import annotations

import csv
import gc
import re
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import IO, Any

import numpy as np
import torch

from ..validation import check_float, check_int, check_int_list
from .impls import BenchConfig, get_impl, make_inputs, reference_attention
from .measure import (
    cpu_load_per_core,
    default_cap_bytes,
    environment,
    guard_reason,
    matmul_peak_gflops,
    measure_peak_extra,
    time_call,
)

STATUSES = ("ok", "n/a", "skipped", "oom", "cancelled", "error")
DISTURBED_LOAD_PER_CORE = 1.5  # runnable tasks per core above which timings are not to be trusted
FIT_MIN_N = 512  # slopes are fitted from here up
CHECK_N = 128  # the n at which every implementation is compared with the float64 reference


@dataclass(frozen=True)
class BenchResult:
    """One row of the results table and of the CSV (``peak_bytes`` and ``predicted_bytes`` are
    beyond the inputs; ``None`` where not measured)."""

    impl: str
    device: str
    dtype: str
    batch: int
    heads: int
    n: int
    d: int
    causal: bool
    median_ms: float | None
    iqr_ms: float | None
    peak_bytes: int | None
    predicted_bytes: int
    gflops: float | None
    status: str
    pct_of_peak: float | None = None
    samples: int = 0
    max_error: float | None = None
    backend: str = ""
    memory_source: str = ""
    note: str = ""
    kv_heads: int | None = None  # K/V heads (GQA/MQA when fewer than heads)


CSV_COLUMNS = tuple(f.name for f in fields(BenchResult))


def _result(config: BenchConfig, predicted: int, status: str, note: str = "", **values: Any) -> BenchResult:
    return BenchResult(
        impl=config.impl,
        device=config.device,
        dtype=config.dtype,
        batch=config.batch,
        heads=config.heads,
        n=config.n,
        d=config.d,
        causal=config.causal,
        kv_heads=config.kv_heads,
        median_ms=values.pop("median_ms", None),
        iqr_ms=values.pop("iqr_ms", None),
        peak_bytes=values.pop("peak_bytes", None),
        predicted_bytes=predicted,
        gflops=values.pop("gflops", None),
        status=status,
        note=note,
        **values,
    )


def is_oom(exc: BaseException) -> bool:
    """torch's and Python's out-of-memory errors, and the CPU allocator's RuntimeError."""
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


NOT_AVAILABLE = "not available for these inputs"


def not_available(reason: str) -> str:
    """The note of a forced kernel that cannot run some inputs: never an error, always torch's reason."""
    return f"{NOT_AVAILABLE}: {reason}" if reason else NOT_AVAILABLE


def _torch_says(message: Warning | str) -> str:
    """A torch warning without its "(Triggered internally at <file>:<line>.)" tail."""
    return re.sub(r"\s*\(Triggered internally at [^)]*\)", "", str(message)).strip()


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_config(
    config: BenchConfig,
    *,
    cap_bytes: int | None = None,
    min_run_time: float = 0.2,
    min_samples: int = 3,
    deadline: float | None = None,
    peak_gflops: float | None = None,
    max_error: float | None = None,
    warm_up: bool = True,
) -> BenchResult:
    """Measure one configuration; never raises for a kernel that cannot run or runs out of memory.

    The memory guard runs first: a configuration whose inputs plus predicted extra
    memory exceed ``cap_bytes`` (default :func:`default_cap_bytes`) is skipped before
    any tensor is made. Then one warm-up call (``warm_up``; always on CUDA), one call
    whose peak memory is measured, and the timed calls. A sweep warms each
    implementation up once, at its first configuration: on the CPU a larger n needs no
    new initialisation, and the memory-measured call already precedes the timing.
    """
    impl = get_impl(config.impl)
    dev = torch.device(config.device)
    predicted = int(impl.extra_bytes(config))
    reason = impl.not_here(dev, config.torch_dtype)
    if reason:
        return _result(config, predicted, "n/a", reason)
    cap = default_cap_bytes(dev) if cap_bytes is None else check_int("cap_bytes", cap_bytes, low=1)
    reason = guard_reason(config.input_bytes() + predicted, cap)
    if reason:
        return _result(config, predicted, "skipped", reason)

    inputs: Any = None
    failure: tuple[str, str] | None = None
    try:
        inputs = impl.prepare(*make_inputs(config))

        def call() -> Any:
            return impl.run(inputs, config.causal)

        first_s = 0.0

        def timed_call() -> Any:  # the call alone, without the memory bookkeeping around it
            nonlocal first_s
            started = time.perf_counter()
            out = call()
            first_s = time.perf_counter() - started
            return out

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if warm_up or dev.type == "cuda":
                    call()  # warm-up: kernels chosen, caches filled, lazy initialisation done
                    if dev.type == "cuda":
                        torch.cuda.synchronize(dev)
                peak, source = measure_peak_extra(timed_call, dev)  # also a warm-up for this shape
            except RuntimeError as exc:
                if impl.forced and not is_oom(exc):  # e.g. "No available kernel": a limit of the kernel, no fault
                    told = " ".join(dict.fromkeys(_torch_says(w.message) for w in caught))
                    return _result(config, predicted, "n/a", not_available(told or _first_line(exc)))
                raise
        backend = impl.backend(inputs, config.causal)
        timing = time_call(
            call, dev, min_run_time=min_run_time, min_samples=min_samples, deadline=deadline, expected_s=first_s
        )
    except (RuntimeError, MemoryError) as exc:
        failure = ("oom" if is_oom(exc) else "error", _first_line(exc))
    finally:
        inputs = None  # the closure `call` sees this too, so the tensors can go
    _free(dev)  # after the except block: the traceback's frames held the big tensors until now
    if failure is not None:
        return _result(config, predicted, *failure)
    gflops = config.flops() / timing.median / 1e9
    return _result(
        config,
        predicted,
        "ok",
        median_ms=timing.median * 1e3,
        iqr_ms=timing.iqr * 1e3,
        peak_bytes=peak,
        gflops=gflops,
        pct_of_peak=100.0 * gflops / peak_gflops if peak_gflops else None,
        samples=len(timing.samples),
        max_error=max_error,
        backend=backend,
        memory_source=source,
    )


def correctness_error(config: BenchConfig, n: int = CHECK_N) -> float | None:
    """Max |output − float64 reference| of the config's implementation at a small ``n``.

    ``None`` when the implementation cannot run there.
    """
    impl = get_impl(config.impl)
    dev = torch.device(config.device)
    if impl.not_here(dev, config.torch_dtype):
        return None
    q, k, v = make_inputs(config, n=min(n, config.n), seed=1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = impl.to_tensor(impl.run(impl.prepare(q, k, v), config.causal))
    except RuntimeError:
        return None
    ref = reference_attention(q, k, v, config.causal)
    return float((out.to(device=ref.device, dtype=torch.float64) - ref).abs().max())


@dataclass(frozen=True)
class SweepSpec:
    """A grid of configurations: every implementation at every n, one shape and dtype."""

    impls: tuple[str, ...] = ("naive", "sdpa", "tiled")
    ns: tuple[int, ...] = (128, 256, 512, 1024, 2048)
    d: int = 64
    heads: int = 8
    batch: int = 1
    dtype: str = "float32"
    causal: bool = False
    device: str = "auto"
    kv_heads: int | None = None  # None: as many as heads (MHA)

    def configs(self) -> list[BenchConfig]:
        """n outermost, so a sweep stopped early still compares every implementation."""
        if not self.impls:
            raise ValueError("choose at least one implementation")
        for name in self.impls:
            get_impl(name)
        ns = sorted(set(check_int_list("ns", self.ns, low=1)))
        return [
            BenchConfig(name, n, self.d, self.heads, self.batch, self.dtype, self.causal, self.device, self.kv_heads)
            for n in ns
            for name in dict.fromkeys(self.impls)
        ]


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


def run_sweep(
    spec: SweepSpec = DEFAULT_SWEEP,
    *,
    cap_bytes: int | None = None,
    budget_s: float | None = DEFAULT_BUDGET_S,
    min_run_time: float = DEFAULT_MIN_RUN_TIME,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
    check_correctness: bool = True,
    cached: Callable[[BenchConfig], BenchResult | None] | None = None,
) -> SweepResult:
    """Run every configuration of ``spec`` in order and return the rows.

    Stops cleanly when ``should_stop()`` turns true or when ``budget_s`` seconds are used
    up; the configurations left are recorded as ``cancelled`` or ``skipped``. A
    configuration that the budget cannot cover (its time predicted from the same
    implementation's last n, scaled as n²) is skipped rather than started.
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
    errors: dict[str, float | None] = {}
    last_ok: dict[str, tuple[int, float]] = {}  # impl -> (n, seconds per call)
    warmed: set[str] = set()
    rows: list[BenchResult] = []
    stopped: str | None = None

    for i, config in enumerate(configs):
        if progress:
            progress(SweepProgress(i, len(configs), config, None))
        reuse = cached(config) if cached else None
        predicted = int(get_impl(config.impl).extra_bytes(config))
        if reuse is not None:
            row = reuse
        elif stopped == "cancelled" or (should_stop is not None and should_stop()):
            stopped = "cancelled"
            row = _result(config, predicted, "cancelled", "the sweep was cancelled")
        elif (why := _over_budget(config, last_ok, deadline, budget_s, min_run_time)) is not None:
            stopped = stopped or ("budget" if why.startswith("the time budget") else None)
            row = _result(config, predicted, "skipped", why)
        else:
            if check_correctness and config.impl not in errors:
                errors[config.impl] = correctness_error(config)
            row = run_config(
                config,
                cap_bytes=cap_bytes,
                min_run_time=min_run_time,
                deadline=deadline,
                peak_gflops=peak,
                max_error=errors.get(config.impl),
                warm_up=config.impl not in warmed,
            )
            if row.status == "ok":
                warmed.add(config.impl)
        if row.status == "ok" and row.median_ms is not None:
            last_ok[config.impl] = (config.n, row.median_ms / 1e3)
        rows.append(row)
        if progress:
            progress(SweepProgress(i + 1, len(configs), config, row))
    env = environment(configs[0].device)
    return SweepResult(rows, time.perf_counter() - start, peak, stopped, env, load)


def _over_budget(
    config: BenchConfig,
    last_ok: dict[str, tuple[int, float]],
    deadline: float | None,
    budget_s: float | None,
    min_run_time: float,
) -> str | None:
    if deadline is None:
        return None
    left = deadline - time.perf_counter()
    if left <= 0:
        return f"the time budget of {budget_s:g} s was used up"
    if config.impl in last_ok:
        n_prev, t_prev = last_ok[config.impl]
        per_call = t_prev * (config.n / n_prev) ** 2
        expected = 4 * per_call + min_run_time  # memory-measured call, three timed calls
        if expected > left:
            return f"would take about {expected:.0f} s; {left:.0f} s of the {budget_s:g} s budget is left"
    return None


@dataclass(frozen=True)
class PlannedConfig:
    """A configuration before it runs: the memory it will need, and why it will not run (if so)."""

    config: BenchConfig
    needed_bytes: int
    refusal: str | None


def plan(spec: SweepSpec, cap_bytes: int | None = None) -> list[PlannedConfig]:
    """What :func:`run_sweep` would do about memory, without running anything."""
    configs = spec.configs()
    cap = default_cap_bytes(configs[0].device) if cap_bytes is None else check_int("cap_bytes", cap_bytes, low=1)
    out = []
    for c in configs:
        impl = get_impl(c.impl)
        need = c.input_bytes() + int(impl.extra_bytes(c))
        why = impl.not_here(torch.device(c.device), c.torch_dtype) or guard_reason(need, cap)
        out.append(PlannedConfig(c, need, why))
    return out


# ---- scaling fits -------------------------------------------------------------------------


def fit_loglog_slope(ns: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    """Least-squares fit of log(value) = slope·log(n) + intercept; returns (slope, intercept).

    A slope of 2 means the value grows as n², 1 as n.
    """
    x = np.asarray(ns, dtype=float)
    y = np.asarray(values, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"ns and values must be two lists of one length, got {x.shape} and {y.shape}")
    if len(np.unique(x)) < 2:
        raise ValueError("a slope needs at least two different n")
    if not (np.all(x > 0) and np.all(y > 0) and np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("every n and every value must be positive and finite to fit on log-log axes")
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope), float(intercept)


MIN_GROWTH_SLOPE = 1.0  # attention's work grows at least as n: slower growth in time is fixed cost per call
MIN_POINTS_AFTER_KNEE = 3  # past a launch-bound stretch, an exponent needs three sizes that grow


def growth_start(ns: Sequence[float], times: Sequence[float], min_slope: float = MIN_GROWTH_SLOPE) -> int:
    """Index (into ``ns`` sorted ascending) of the first size from which the time grows.

    Every implementation of attention does at least n (in fact n²) work, so where doubling n
    multiplies the time by less than 2^``min_slope`` the time is set by a fixed cost per call
    (kernel launches, Python, thread wake-ups), not by the algorithm: "launch-bound". The
    growing range is the longest tail of sizes in which every step grows at least that fast;
    the sizes before it are launch-bound. Returns ``len(ns) − 1`` when no step grows.
    """
    x = np.asarray(ns, dtype=float)
    y = np.asarray(times, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(f"ns and times must be two non-empty lists of one length, got {x.shape} and {y.shape}")
    if not (np.all(np.diff(x) > 0) and np.all(x > 0) and np.all(y > 0) and np.all(np.isfinite(y))):
        raise ValueError("ns must increase and every n and time must be positive and finite")
    start = x.size - 1
    while start > 0 and np.log(y[start] / y[start - 1]) / np.log(x[start] / x[start - 1]) >= min_slope:
        start -= 1
    return start


@dataclass(frozen=True)
class ScalingFit:
    """log(ms) = time_slope·log(n) + time_intercept over n_from…n_to, and the slope of measured memory.

    ``time_slope`` is ``None`` where the times do not grow over enough sizes to mean a law; then
    ``launch_bound_below`` is the first n whose time grows (``None`` if none does). ``launch_bound_to``
    is the largest n still launch-bound when smaller sizes were dropped from the fit.
    """

    impl: str
    time_slope: float | None
    memory_slope: float | None
    n_from: int
    n_to: int
    time_intercept: float | None = None
    launch_bound_below: int | None = None
    launch_bound_to: int | None = None

    def describe(self) -> str:
        """One line for a reader: the exponent with its range, or why there is none."""
        memory = f", memory ∝ n^{self.memory_slope:.2f}" if self.memory_slope is not None else ""
        if self.time_slope is not None:
            dropped = f"; launch-bound up to n = {self.launch_bound_to}" if self.launch_bound_to else ""
            return f"{self.impl}: time ∝ n^{self.time_slope:.2f} (n = {self.n_from}…{self.n_to}{dropped}){memory}"
        if self.launch_bound_below is not None:
            why = f"launch-bound below n = {self.launch_bound_below}, too few larger sizes for an exponent"
        else:
            why = f"launch-bound at every n measured (up to {self.n_to}): no exponent"
        return f"{self.impl}: time {why}{memory}"


def scaling_fits(rows: Sequence[BenchResult], tail: int = 3, min_n: int = FIT_MIN_N) -> dict[str, ScalingFit]:
    """Per implementation, the log-log slopes of time and of measured memory against n.

    Time is fitted only where it grows (:func:`growth_start`), over the ``tail`` largest such n
    that are at least ``min_n``. If launch-bound sizes had to be dropped and fewer than three
    growing sizes remain, no exponent is given: the fit says "launch-bound below n = …" instead.
    Memory is fitted over the ``tail`` largest ok n ≥ ``min_n``.
    """
    tail = check_int("tail", tail, low=2)
    min_n = check_int("min_n", min_n, low=1)
    fits: dict[str, ScalingFit] = {}
    for name in dict.fromkeys(r.impl for r in rows):
        ok = sorted((r for r in rows if r.impl == name and r.status == "ok" and r.n >= min_n), key=lambda r: r.n)
        ok = list({r.n: r for r in ok}.values())  # one row per n
        if len(ok) < 2:
            continue
        last = ok[-tail:]
        ns = [r.n for r in last]
        mem = [r.peak_bytes for r in last]
        m_slope = fit_loglog_slope(ns, mem)[0] if all(m is not None and m > 0 for m in mem) else None
        if not all(r.median_ms for r in ok):
            fits[name] = ScalingFit(name, None, m_slope, ns[0], ns[-1])
            continue
        start = growth_start([r.n for r in ok], [r.median_ms for r in ok])
        growing = ok[start:][-tail:]
        flat_to = ok[start - 1].n if start > 0 else None
        if start > 0 and len(ok) - start < MIN_POINTS_AFTER_KNEE:
            grows = len(ok) - start >= 2  # else not one step grows: every size is launch-bound
            fits[name] = ScalingFit(
                name,
                None,
                m_slope,
                ok[0].n,
                ok[-1].n,
                launch_bound_below=ok[start].n if grows else None,
                launch_bound_to=flat_to if grows else ok[-1].n,
            )
            continue
        g_ns = [r.n for r in growing]
        t_slope, t_icpt = fit_loglog_slope(g_ns, [r.median_ms for r in growing])
        fits[name] = ScalingFit(name, t_slope, m_slope, g_ns[0], g_ns[-1], t_icpt, launch_bound_to=flat_to)
    return fits


# ---- output -------------------------------------------------------------------------------


def result_dicts(rows: Sequence[BenchResult]) -> list[dict[str, Any]]:
    """Rows as plain dicts with the CSV's columns, in order."""
    return [asdict(r) for r in rows]


def write_csv(rows: Sequence[BenchResult], out: IO[str]) -> None:
    """Write the rows to an open text file with a header line of :data:`CSV_COLUMNS`."""
    writer = csv.DictWriter(out, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in result_dicts(rows):
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})


def speedups(rows: Sequence[BenchResult], baseline: str = "naive") -> list[dict[str, Any]]:
    """For every ok row that has an ok ``baseline`` row at the same n: baseline time / its time."""
    base = {r.n: r.median_ms for r in rows if r.impl == baseline and r.status == "ok" and r.median_ms}
    return [
        {"impl": r.impl, "n": r.n, "speedup": base[r.n] / r.median_ms}
        for r in rows
        if r.status == "ok" and r.median_ms and r.n in base and r.impl != baseline
    ]
