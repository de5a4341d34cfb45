"""Numbers in, whatever device they live on: a tensor on a GPU, one that requires grad or one in bfloat16
becomes a host numpy array before plotting."""

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
