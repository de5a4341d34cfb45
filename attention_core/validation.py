"""Input checks shared by every public function of the core.

Each helper raises ``ValueError`` with a sentence that says what was expected
and what arrived, so the pages can show the message as it is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_tensor(name: str, x: object, *, min_dim: int = 1, finite: bool = True) -> torch.Tensor:
    """A floating-point tensor with at least ``min_dim`` dims and (by default) no NaN/inf."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise ValueError(
            f"{name} must have a floating dtype (float16, bfloat16, float32 or float64), got {x.dtype}"
        )
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimension(s), got shape {tuple(x.shape)}")
    if finite and x.numel() and x.device.type != "meta" and not all_finite(x):
        raise ValueError(f"{name} contains NaN or inf; every input value must be finite")
    return x


def all_finite(x: torch.Tensor) -> bool:
    """Whether a non-empty float tensor holds no NaN or ±inf, from one reduction pass.

    ``aminmax`` propagates NaN and returns ±inf when present, so two scalars answer; it reads
    ``x`` once and allocates nothing of its size (``isfinite(x).all()`` writes a bool copy).
    """
    lo, hi = torch.aminmax(x.detach())  # a check, not a step of the caller's graph: autograd saves nothing
    return bool(torch.isfinite(lo) & torch.isfinite(hi))


def check_same_device(**tensors: torch.Tensor | None) -> None:
    """Every tensor given (``None`` skipped) on one device; else a ``ValueError`` naming both devices.

    torch's own message for this (``attn_mask must be on cpu, got cuda:0``) arrives from deep
    inside a kernel; this one says which argument is where and how to fix it.
    """
    named = [(name, t) for name, t in tensors.items() if isinstance(t, torch.Tensor)]
    if not named:
        return
    first_name, first = named[0]
    for name, t in named[1:]:
        if t.device != first.device:
            raise ValueError(
                f"{name} is on {t.device} but {first_name} is on {first.device}; every input must be on one "
                f"device: move it with {name}.to({first_name}.device), or build it with device={first_name}.device "
                "(mask and example builders, like torch.ones, use torch's default device unless told)"
            )


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """A plain integer (bools rejected) within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import numpy as np

            if isinstance(value, np.integer):
                value = int(value)
            else:
                raise TypeError
        except TypeError:
            raise ValueError(f"{name} must be an integer, got {value!r}") from None
    assert isinstance(value, int)
    if low is not None and value < low:
        raise ValueError(f"{name} must be ≥ {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be ≤ {high}, got {value}")
    return value


def check_float(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real number within the given (closed unless told) bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)  # numpy scalars, 0-d tensors
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a real number, got {value!r}") from None
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '≥'} {low}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '≤'} {high}, got {value}")
    return value


def check_int_list(
    name: str, values: Iterable[object], *, low: int | None = None, high: int | None = None
) -> list[int]:
    """A non-empty list of integers, each within bounds."""
    try:
        items = list(values)
    except TypeError:
        raise ValueError(f"{name} must be a list of integers, got {values!r}") from None
    if not items:
        raise ValueError(f"{name} must not be empty")
    return [check_int(f"{name}[{i}]", v, low=low, high=high) for i, v in enumerate(items)]


def check_choice(name: str, value: object, choices: Iterable[str]) -> str:
    """One of a fixed set of strings."""
    options = tuple(choices)
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return str(value)
