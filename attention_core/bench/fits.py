"""How time and measured memory grow with n: log-log slopes, fitted only where the time grows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..power_law import fit_loglog_slope
from ..validation import check_int
from .run import BenchResult

FIT_MIN_N = 512  # slopes are fitted from here up


def crossover_n(rows: Sequence[BenchResult], impl: str, baseline: str = "sdpa") -> int | None:
    """The smallest n from which ``impl`` is faster than ``baseline`` at every larger n measured for
    both (ok rows); ``None`` when it is not faster at the largest."""
    times = {name: {r.n: r.median_ms for r in rows if r.impl == name and r.status == "ok"} for name in (impl, baseline)}
    found = None
    for n in sorted(times[impl].keys() & times[baseline].keys(), reverse=True):
        if times[impl][n] >= times[baseline][n]:  # type: ignore[operator]
            break
        found = n
    return found


MIN_GROWTH_SLOPE = 1.0  # attention's work grows at least as n: slower growth is a fixed cost per call (launches)


def growth_start(ns: Sequence[float], times: Sequence[float]) -> int:
    """Index (into ``ns``, ascending) of the first size of the longest tail in which every step grows the time at
    least as fast as n (:data:`MIN_GROWTH_SLOPE`); ``len(ns) − 1`` when none does. The sizes before are launch-bound."""
    x = np.asarray(ns, dtype=float)
    y = np.asarray(times, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(f"ns and times must be two non-empty lists of one length, got {x.shape} and {y.shape}")
    if not (np.all(np.diff(x) > 0) and np.all(x > 0) and np.all(y > 0) and np.all(np.isfinite(y))):
        raise ValueError("ns must increase and every n and time must be positive and finite")
    start = x.size - 1
    while start > 0 and np.log(y[start] / y[start - 1]) / np.log(x[start] / x[start - 1]) >= MIN_GROWTH_SLOPE:
        start -= 1
    return start


@dataclass(frozen=True)
class ScalingFit:
    """log(ms) = time_slope·log(n) + time_intercept over n_from…n_to, and the slope of measured memory. ``time_slope``
    is ``None`` where the times do not grow over enough sizes; then ``launch_bound_below`` is the first n whose time
    grows (if any). ``launch_bound_to``: the largest n still launch-bound when smaller sizes were dropped."""

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
    """Per implementation, the log-log slopes of time and measured memory against n, over the ``tail`` largest ok
    n ≥ ``min_n``; time only where it grows (:func:`growth_start`), and with no exponent when launch-bound sizes
    were dropped and fewer than three growing sizes remain."""
    tail = check_int("tail", tail, low=2)
    min_n = check_int("min_n", min_n, low=1)
    fits: dict[str, ScalingFit] = {}
    for name in dict.fromkeys(r.impl for r in rows):
        ok = sorted((r for r in rows if r.impl == name and r.status == "ok" and r.n >= min_n), key=lambda r: r.n)
        ok = list({r.n: r for r in ok}.values())  # one row per n
        if len(ok) < 2:
            continue
        ns, mem = [r.n for r in ok[-tail:]], [r.peak_bytes for r in ok[-tail:]]
        m_slope = fit_loglog_slope(ns, mem)[0] if all(m is not None and m > 0 for m in mem) else None
        start = growth_start([r.n for r in ok], [r.median_ms for r in ok])
        flat_to = ok[start - 1].n if start > 0 else None
        if start > 0 and len(ok) - start < 3:  # past a launch-bound stretch, an exponent needs three growing sizes
            grows = len(ok) - start >= 2  # else not one step grows: every size is launch-bound
            below, upto = (ok[start].n, flat_to) if grows else (None, ok[-1].n)
            fits[name] = ScalingFit(name, None, m_slope, ok[0].n, ok[-1].n, launch_bound_below=below,
                                    launch_bound_to=upto)
            continue
        growing = ok[start:][-tail:]
        t_slope, t_icpt = fit_loglog_slope([r.n for r in growing], [r.median_ms for r in growing])
        fits[name] = ScalingFit(name, t_slope, m_slope, growing[0].n, growing[-1].n, t_icpt, launch_bound_to=flat_to)
    return fits
