"""How far an efficient route moves from softmax attention.

Two measures, both against the reference (softmax attention by this project's core in float64):

- the output's relative error ``‖O_route − O‖ / ‖O‖`` (Frobenius norms over every head and row);
- the per-row KL divergence of the weights, ``KL(ref ‖ route) = Σ_j p_j log(p_j / q_j)``: how
  many nats the route's weights lose in describing where softmax attention looks. A sparse
  pattern gives 0 weight to keys softmax attention weighs, so this direction is +∞ there;
  ``KL(route ‖ ref)`` stays finite and for a pattern equals −log(the reference weight it keeps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..device import new_tensor_device
from ..power_law import fit_loglog_slope
from ..validation import check_float, check_int, check_ints, check_tensor


def random_qkv(
    n: int, d: int = 64, *, heads: int = 1, batch: int = 1, n_k: int | None = None,
    seed: int = 0, std: float = 1.0, device: str | torch.device | None = None, dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """Gaussian ``q (batch, heads, n, d)``, ``k`` and ``v (batch, heads, n_k, d)`` from ``seed``.

    ``std`` scales q and k (not v): the scores q·k/√d then have a spread of about ``std²``, so a
    small ``std`` gives spread-out attention and a large one peaked attention. Drawn on the CPU,
    so a seed gives the same numbers on every device.
    """
    n = check_int("n", n, low=1, high=1 << 20)
    n_k = n if n_k is None else check_int("n_k", n_k, low=1, high=1 << 20)
    d = check_int("d", d, low=1, high=1 << 14)
    heads, batch = check_ints(heads=heads, batch=batch, low=1, high=1 << 12)
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    std = check_float("std", std, low=0.0, low_open=True)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn(batch, heads, n, d, generator=gen) * std  # (B, H, n, d)
    k = torch.randn(batch, heads, n_k, d, generator=gen) * std  # (B, H, n_k, d)
    v = torch.randn(batch, heads, n_k, d, generator=gen)  # (B, H, n_k, d)
    dev = new_tensor_device(device)
    return q.to(dev, dtype), k.to(dev, dtype), v.to(dev, dtype)


def relative_error(output: torch.Tensor, reference: torch.Tensor) -> float:
    """``‖output − reference‖ / ‖reference‖`` in float64 (Frobenius norms over every element)."""
    check_tensor("output", output)
    check_tensor("reference", reference)
    if output.shape != reference.shape:
        raise ValueError(f"output {tuple(output.shape)} and reference {tuple(reference.shape)} must have one shape")
    ref = reference.detach().to("cpu", torch.float64)
    norm = float(ref.norm())
    if norm == 0.0:
        raise ValueError("the reference is all zeros: a relative error is undefined")
    return float((output.detach().to("cpu", torch.float64) - ref).norm()) / norm


def _check_weights(name: str, w: torch.Tensor) -> torch.Tensor:
    check_tensor(name, w, min_dim=1)
    w = w.detach().to("cpu", torch.float64)
    if bool((w < 0).any()):
        raise ValueError(f"{name} has negative entries: they are not attention weights (a distribution per row)")
    return w


def row_kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``KL(p ‖ q)`` per row, in nats, for weights ``(..., L, S)`` → ``(..., L)`` float64 on the CPU.

    Each row is normalised first (a row of zeros, a query with no key, gives 0). Terms with
    ``p = 0`` count 0; a key with ``p > 0`` and ``q = 0`` makes the row +∞.
    """
    p, q = _check_weights("p", p), _check_weights("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p {tuple(p.shape)} and q {tuple(q.shape)} must have one shape")
    p = p / p.sum(dim=-1, keepdim=True).clamp_min(1e-300)  # (..., L, S)
    q = q / q.sum(dim=-1, keepdim=True).clamp_min(1e-300)  # (..., L, S)
    return (torch.special.xlogy(p, p) - torch.special.xlogy(p, q)).sum(dim=-1)  # (..., L); xlogy(0, ·) = 0


@dataclass(frozen=True)
class Accuracy:
    """A route against softmax attention (the float64 reference, or a trained model's layer) on the same inputs.

    ``kl`` is ``KL(ref ‖ route)`` per row and ``reverse_kl`` ``KL(route ‖ ref)``, each
    ``(..., L)``; both ``None`` when the route has no weight matrix that is a distribution
    (``note`` says why). ``kept`` is the reference weight that falls on keys the route weighs at all,
    mean over rows (1 for dense routes, below 1 for a sparse pattern).
    """

    relative_error: float
    kl: torch.Tensor | None
    reverse_kl: torch.Tensor | None
    kept: float | None
    note: str | None = None


def compare(
    output: torch.Tensor,
    reference: torch.Tensor,
    weights: torch.Tensor | None,
    reference_weights: torch.Tensor,
    *,
    note: str | None = None,
) -> Accuracy:
    """:class:`Accuracy` of a route's ``output`` and ``weights`` against the reference's (``None`` weights:
    no KL, with ``note`` saying why)."""
    err = relative_error(output, reference)
    if weights is None:
        return Accuracy(err, None, None, None, note)
    ref = _check_weights("reference_weights", reference_weights)
    route = _check_weights("weights", weights)
    kept = float((ref * (route > 0)).sum(dim=-1).mean())
    return Accuracy(err, row_kl(ref, route), row_kl(route, ref), kept, note)


@dataclass(frozen=True)
class ErrorCurve:
    """A route's relative error against a size: ``errors[i][s]`` at ``x[i]`` (features, rank) for the s-th seed."""

    x: tuple[int, ...]
    errors: tuple[tuple[float, ...], ...]

    @property
    def mean(self) -> tuple[float, ...]:
        return tuple(float(np.mean(e)) for e in self.errors)

    @property
    def std(self) -> tuple[float, ...]:
        return tuple(float(np.std(e)) for e in self.errors)

    def slope(self) -> float:
        """Log-log slope of the mean error against x (−0.5 for an error ∝ 1/√x)."""
        return fit_loglog_slope(self.x, self.mean)[0]

    def inverse_sqrt_trend(self) -> tuple[float, ...]:
        """The least-squares fit ``c / √x`` to the mean error, at each x: the 1/√m law to draw beside it."""
        basis = 1.0 / np.sqrt(np.asarray(self.x, float))
        c = float(basis @ np.asarray(self.mean, float) / (basis @ basis))
        return tuple(float(c * b) for b in basis)

    def ratio(self, small: int, large: int) -> float:
        """Mean error at ``small`` over mean error at ``large`` (how many times it fell)."""
        mean = dict(zip(self.x, self.mean, strict=True))
        if small not in mean or large not in mean:
            raise ValueError(f"small and large must be sizes measured, {list(self.x)}; got {small} and {large}")
        return mean[small] / mean[large] if mean[large] > 0 else math.inf
