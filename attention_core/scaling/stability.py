"""Numerical stability: why softmax subtracts the row max before exp, in each dtype."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import torch

from ..attention import stable_softmax
from ..device import new_tensor_device
from ..validation import check_choice, check_float, check_int, check_tensor
from ._sampling import MAX_KEYS

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}


def overflow_limit(dtype: str) -> float:
    """The largest x whose exp(x) is finite in ``dtype``: log of the largest finite number."""
    dtype = check_choice("dtype", dtype, DTYPES)
    return math.log(torch.finfo(DTYPES[dtype]).max)


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """exp(x) / Σ exp(x) along the last dim, with no max subtracted: overflows for large x."""
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_overflow(logits: torch.Tensor, dtype: str = "float32") -> pd.DataFrame:
    """The naive and the max-subtracted softmax of the same ``logits (n,)`` in ``dtype``.

    Both run in the dtype itself (as a kernel would), on the logits rounded to it; the reference is float64's
    softmax of those rounded logits. Columns: ``logit``, ``exp_naive`` (exp(x) in the dtype: inf once x passes
    :func:`overflow_limit`), ``naive`` (NaN once it does), ``stable``, ``reference``.
    """
    check_tensor("logits", logits, min_dim=1)
    if logits.dim() != 1 or not 1 <= logits.numel() <= MAX_KEYS:
        raise ValueError(f"logits must be 1-D with 1 to {MAX_KEYS} entries, got shape {tuple(logits.shape)}")
    x = logits.to(DTYPES[check_choice("dtype", dtype, DTYPES)])  # may round (or overflow to ±inf in float16)
    stable = stable_softmax(x) if bool(torch.isfinite(x).all()) else torch.full_like(x, float("nan"))
    columns = {"logit": x, "exp_naive": torch.exp(x), "naive": naive_softmax(x), "stable": stable,
               "reference": torch.softmax(x.double(), dim=-1)}  # fmt: skip
    return pd.DataFrame({name: v.double().cpu().numpy() for name, v in columns.items()})  # widening keeps inf, NaN


def overflow_logits(magnitude: float, n: int = 8, *, device: str | torch.device | None = None) -> torch.Tensor:
    """``n`` logits evenly spaced from +magnitude down to −magnitude, float64 ``(n,)``."""
    magnitude = check_float("magnitude", magnitude, low=0.0, high=1e6)
    n = check_int("n", n, low=2, high=MAX_KEYS)
    return torch.linspace(magnitude, -magnitude, n, dtype=torch.float64, device=new_tensor_device(device))


def overflow_sweep(magnitudes: Sequence[float], dtype: str = "float32", n: int = 8) -> pd.DataFrame:
    """Naive against stable softmax as the logits grow: ``n`` logits in [−m, m] for each m.

    Columns: ``magnitude``, ``naive_error`` and ``stable_error``: the largest |weight − float64 reference|, NaN
    when that softmax gave NaN.
    """
    dtype = check_choice("dtype", dtype, DTYPES)
    mags = [check_float(f"magnitudes[{i}]", m, low=0.0, high=1e6) for i, m in enumerate(magnitudes)]
    if not mags:
        raise ValueError("magnitudes must hold at least one value")
    out = []
    for m in mags:
        t = softmax_overflow(overflow_logits(m, n), dtype)
        errors = {f"{s}_error": float((t[s] - t["reference"]).abs().max(skipna=False)) for s in ("naive", "stable")}
        out.append({"magnitude": m, **errors})
    return pd.DataFrame(out)
