"""Low rank: Linformer's projection of keys and values, and the spectrum that justifies it.

Linformer (Wang et al. 2020) projects the n keys and the n values along the sequence to ``rank``
rows, ``K' = E K`` and ``V' = F V`` with ``E, F`` of shape ``(rank, n)``, then attends as usual:
``softmax(Q K'ᵀ · scale) V'``. The score matrix is ``(n, rank)``, so time and memory grow as n.
Its claim rests on attention matrices being close to low rank: most of their energy (the sum
of squared singular values) sits in a few singular values. :func:`attention_spectrum` measures
that on any weights, e.g. a trained model's.

Linformer *learns* E and F. Untrained, two choices are offered:

- ``"gaussian"``: a Johnson–Lindenstrauss projection, the one its theorem uses; even at rank = n it is not
  the identity, so the error does not vanish;
- ``"pool"``: each row averages a run of tokens, as a pooling layer would: exact at rank = n.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..attention import check_attention_args, dot_product_attention
from ..device import new_tensor_device
from ..validation import check_choice, check_int, check_tensor

PROJECTIONS = ("gaussian", "pool")


def linformer_projections(
    rank: int,
    n: int,
    *,
    seed: int = 0,
    kind: str = "gaussian",
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``(rank, n)`` projections ``E`` (for keys) and ``F`` (for values).

    ``"gaussian"``: independent N(0, 1/rank) entries, E then F drawn on the CPU from ``seed``.
    ``"pool"``: row r averages tokens ``⌊r·n/rank⌋ … ⌊(r+1)·n/rank⌋ − 1``, E = F.
    """
    n = check_int("n", n, low=1, high=1 << 20)
    rank = check_int("rank", rank, low=1, high=n)
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    kind = check_choice("kind", kind, PROJECTIONS)
    dev = new_tensor_device(device)
    if kind == "gaussian":
        gen = torch.Generator(device="cpu").manual_seed(seed)
        e = torch.randn(rank, n, generator=gen, dtype=torch.float64) / rank**0.5  # (rank, n)
        f = torch.randn(rank, n, generator=gen, dtype=torch.float64) / rank**0.5  # (rank, n)
        return e.to(dev, dtype), f.to(dev, dtype)
    edges = (torch.arange(rank + 1, dtype=torch.float64) * n / rank).floor().long()  # (rank + 1,)
    tokens = torch.arange(n)  # (n,)
    member = (tokens[None, :] >= edges[:-1, None]) & (tokens[None, :] < edges[1:, None])  # (rank, n)
    pool = (member.double() / member.sum(dim=-1, keepdim=True)).to(dev, dtype)  # (rank, n): each row averages its run
    return pool, pool


def linformer_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
    rank: int | None = None, seed: int = 0, kind: str = "gaussian",
    projection: tuple[torch.Tensor, torch.Tensor] | None = None, scale: float | None = None,
) -> torch.Tensor:  # fmt: skip
    """softmax(Q (E K)ᵀ · scale) (F V): ``q (N, ..., L, E)``, ``k (N, ..., S, E)``, ``v (N, ..., S, Ev)``
    → ``(N, ..., L, Ev)``. ``projection``, given in place of ``rank``, is the pair ``(E, F)`` of ``(rank, S)``
    tensors, else they are drawn."""
    s, _ = check_attention_args(q, k, v, None, 0.0, False, scale, positive_scale=True, min_length=1)
    if (rank is None) == (projection is None):
        raise ValueError("give rank (how many rows to project the keys to) or a projection (E, F), not both")
    if projection is None:
        projection = linformer_projections(rank, k.shape[-2], seed=seed, kind=kind, device=k.device, dtype=k.dtype)
    elif not isinstance(projection, tuple) or len(projection) != 2:
        raise ValueError(f"projection must be a pair (E, F) of (rank, S) tensors, got {type(projection).__name__}")
    e, f = projection
    for name, p in (("E", e), ("F", f)):
        check_tensor(f"projection {name}", p, min_dim=2)
        if p.dim() != 2 or p.shape[-1] != k.shape[-2] or p.shape != e.shape:
            raise ValueError(f"projection {name} must be (rank, S={k.shape[-2]}), got {tuple(p.shape)}")
        if p.device != k.device or p.dtype != k.dtype:
            raise ValueError(f"projection {name} must be {k.dtype} on {k.device}, like k; got {p.dtype} on {p.device}")
    k_low = e @ k  # (rank, S) @ (N, ..., S, E) -> (N, ..., rank, E)
    v_low = f @ v  # (rank, S) @ (N, ..., S, Ev) -> (N, ..., rank, Ev)
    return dot_product_attention(q, k_low, v_low, scale=s)  # (N, ..., L, Ev)


# ---- how low-rank real attention is ---------------------------------------------------------


@dataclass(frozen=True)
class Spectrum:
    """Singular values of attention weights, largest first: ``(..., r)`` float64, r = min(L, S)."""

    singular_values: torch.Tensor

    @property
    def energy(self) -> torch.Tensor:
        """Cumulative share of the energy Σσ² in the top 1, 2, … r values: ``(..., r)``, ending at 1."""
        sq = self.singular_values**2  # (..., r)
        return sq.cumsum(dim=-1) / sq.sum(dim=-1, keepdim=True).clamp_min(1e-300)  # (..., r)


def attention_spectrum(weights: torch.Tensor) -> Spectrum:
    """The singular values of attention weights ``(..., L, S)`` (e.g. a trained model's, every head
    at once: ``(n_layers, H, L, L)``), computed in float64 on the CPU."""
    check_tensor("weights", weights, min_dim=2)
    return Spectrum(torch.linalg.svdvals(weights.detach().to("cpu", torch.float64)))  # (..., min(L, S))
