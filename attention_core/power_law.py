"""A power law read off measurements: the least-squares line through (log n, log value).

Light on purpose (numpy only): the benchmark's fits, the KV-cache decode timing and the Performer's error
curve all fit their slopes with it, and the heads page, which shows the decode timing, never imports the
benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def fit_loglog_slope(ns: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    """Least-squares fit of log(value) = slope·log(n) + intercept; returns (slope, intercept).

    A slope of 2 means the value grows as n², 1 as n, −0.5 as 1/√n.
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
