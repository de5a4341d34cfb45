"""Input checks shared by every public function of the core: a ``ValueError`` whose sentence says what was
expected and what arrived, so the pages can show it as it is."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np
import torch
from torch._subclasses.fake_tensor import is_fake


def check_tensor(name: str, x: object, *, min_dim: int = 1, finite: bool = True) -> torch.Tensor:
    """A floating-point tensor with at least ``min_dim`` dims and (by default) no NaN/inf."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise ValueError(
            f"{name} must have a floating dtype (float16, bfloat16, float32 or float64), got {x.dtype}"
        )
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimension(s), got shape {tuple(x.shape)}")
    if finite and x.numel() and not all_finite(x):
        raise ValueError(f"{name} contains NaN or inf; every input value must be finite")
    return x


def holds_data(x: torch.Tensor) -> bool:
    """Whether ``x``'s values can be read: not for meta tensors and ``FakeTensorMode``'s fakes (``torch.compile``'s,
    and the device tests' GPU that is not there). Every value check goes through this seam; shape checks run."""
    return x.device.type != "meta" and not is_fake(x)


def any_true(x: torch.Tensor) -> bool:
    """``bool(x.any())``, and ``False`` on a tensor without data (:func:`holds_data`)."""
    return holds_data(x) and bool(x.any())


def all_finite(x: torch.Tensor) -> bool:
    """Whether ``x`` holds no NaN or ±inf (``True`` when empty or without data, :func:`holds_data`)."""
    return not holds_data(x) or bool(finite_flag(x))


def finite_flag(x: torch.Tensor) -> torch.Tensor:
    """:func:`all_finite` as a 0-d bool tensor on ``x``'s device, not read back (no device sync). ``aminmax``
    propagates NaN and ±inf, so two scalars answer: one read of ``x`` and no bool copy of its size."""
    if x.numel() == 0:
        return torch.ones((), dtype=torch.bool, device=x.device)
    lo, hi = torch.aminmax(x.detach())  # a check, not a step of the caller's graph: autograd saves nothing
    return torch.isfinite(lo) & torch.isfinite(hi)


def check_weight(name: str, w: object, x: torch.Tensor, rows: int | None = None) -> torch.Tensor:
    """A finite 2-D weight matrix in ``x``'s dtype and on its device, with ``rows`` rows when given."""
    w = check_tensor(name, w, min_dim=2)
    if w.dim() != 2 or (rows is not None and w.shape[0] != rows):
        want = "2-D" if rows is None else f"(d_model={rows}, d)"
        raise ValueError(f"{name} must have shape {want}, got {tuple(w.shape)}")
    if w.dtype != x.dtype or w.device != x.device:
        raise ValueError(f"{name} must match x's dtype and device ({x.dtype}, {x.device}), got {w.dtype}, {w.device}")
    return w


def check_same_device(**tensors: torch.Tensor | None) -> None:
    """Every tensor given (``None`` skipped) on one device; else a ``ValueError`` that says how to fix it."""
    named = [(name, t) for name, t in tensors.items() if isinstance(t, torch.Tensor)]
    for name, t in named[1:]:
        first_name, first = named[0]
        if t.device != first.device:
            raise ValueError(
                f"{name} is on {t.device} but {first_name} is on {first.device}; every input must be on one "
                f"device: move it with {name}.to({first_name}.device), or build it with device={first_name}.device "
                "(mask and example builders, like torch.ones, use torch's default device unless told)"
            )


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """A plain integer (numpy integers too, bools rejected) within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name} must be ≥ {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be ≤ {high}, got {value}")
    return value


def check_ints(*, low: int | None = None, high: int | None = None, **values: object) -> tuple[int, ...]:
    """:func:`check_int` on each keyword argument, all within ``[low, high]``; the values in the order given."""
    return tuple(check_int(name, value, low=low, high=high) for name, value in values.items())


def check_bool(name: str, value: object) -> bool:
    """``True`` or ``False``, not a truthy stand-in (0, 1, a numpy bool, a string)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_float(
    name: str, value: object, *, low: float | None = None, high: float | None = None,
    low_open: bool = False, high_open: bool = False,
) -> float:  # fmt: skip
    """A finite real number within the given (closed unless told) bounds."""
    try:
        value = float(value)  # numpy scalars and 0-d tensors too
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    except OverflowError:  # an int beyond float's range
        raise ValueError(f"{name} must be finite, got an integer too large for a float") from None
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


def broadcast_shapes(*shapes: Iterable[int]) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to, by torch's rules, else a ``ValueError``. numpy's, not
    ``torch.broadcast_shapes``: torch's imports sympy on its first call (0.8 s of a cold page's start)."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise ValueError(f"shapes {[tuple(s) for s in shapes]} do not broadcast") from None
