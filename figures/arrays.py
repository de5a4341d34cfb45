"""Numbers in, whatever device they live on: a tensor on a GPU, one that requires grad or one in bfloat16
becomes a host numpy array before plotting; and a large matrix shrunk to the cells a figure can show."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_array(values: Any, dtype: Any = float) -> np.ndarray:
    """``values`` (array-like, or a tensor on any device) as a numpy array of ``dtype``."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor, without importing torch here
        values = values.detach().cpu()
        if values.dtype.is_floating_point:
            values = values.double()  # bfloat16 has no numpy type; float64 holds every float exactly
        values = values.numpy()
    return np.asarray(values, dtype=dtype)


def shrink(weights: Any, max_side: int) -> tuple[np.ndarray, int]:
    """Mean-pool the last two axes of ``weights (..., L, L)`` by k×k blocks so that neither exceeds ``max_side``;
    returns (w, k).

    NaN marks a blocked cell: a block of blocked cells only stays NaN (blank), a block cut by the
    diagonal or the window's edge holds the mean of its allowed cells."""
    w = as_array(weights, np.float32)
    if w.ndim < 2 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"weights must end in a square (..., L, L), got shape {w.shape}")
    if max_side < 1:
        raise ValueError(f"max_side must be at least 1, got {max_side}")
    n = w.shape[-1]
    k = -(-n // max_side)  # ceil
    if k <= 1:
        return w, 1
    m = -(-n // k)
    padded = np.pad(w, [(0, 0)] * (w.ndim - 2) + [(0, m * k - n)] * 2, constant_values=np.nan)  # (..., m·k, m·k)
    blocks = padded.reshape(*w.shape[:-2], m, k, m, k)  # (..., m, k, m, k)
    count = (~np.isnan(blocks)).sum(axis=(-3, -1), dtype=np.float32)  # (..., m, m)
    with np.errstate(invalid="ignore"):  # 0 / 0: a block with no allowed cell stays NaN (np.nanmean would warn)
        return np.nansum(blocks, axis=(-3, -1)) / count, k  # (..., m, m)
