"""A power law read off measurements: the least-squares line through (log n, log value). numpy only, so the
heads page's decode timing fits its slope without importing the benchmark."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def fit_loglog_slope(ns: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    """Least-squares fit of log(value) = slope·log(n) + intercept; returns (slope, intercept): 2 means n², −0.5 1/√n."""
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
