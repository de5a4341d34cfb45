"""Shared by the test_attention_* files: random inputs, random masks, and a float64 reference.

The float64 reference below is written with numpy and plain loops, one query row at a
time, so it shares no code (and no torch kernel) with the core.
"""

from __future__ import annotations

import math

import numpy as np
import torch

NEG_INF = float("-inf")


def randn(gen: torch.Generator, *shape: int, device: torch.device | str = "cpu", scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=gen) * scale).to(device)


def make_mask(kind: str | None, shape: tuple[int, ...], gen: torch.Generator, device: torch.device | str):
    """A random bool or float mask whose first query row is fully masked (the zero-row case)."""
    if kind is None:
        return None
    blocked = torch.rand(shape, generator=gen) < 0.3
    blocked[..., 0, :] = True
    if kind == "bool":
        return (~blocked).to(device)
    values = torch.randn(shape, generator=gen)  # a float mask is added: any finite value, or −inf to block
    return values.masked_fill(blocked, NEG_INF).to(device)


def reference_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(weights, output) in float64, one query row at a time; a fully masked row gives zeros."""
    q64, k64, v64 = (t.detach().cpu().double().numpy() for t in (q, k, v))
    L, E = q64.shape[-2:]
    S, Ev = v64.shape[-2:]
    lead = np.broadcast_shapes(q64.shape[:-2], k64.shape[:-2], v64.shape[:-2])
    qb = np.broadcast_to(q64, (*lead, L, E)).reshape(-1, L, E)
    kb = np.broadcast_to(k64, (*lead, S, E)).reshape(-1, S, E)
    vb = np.broadcast_to(v64, (*lead, S, Ev)).reshape(-1, S, Ev)
    allowed = np.ones((*lead, L, S), dtype=bool)
    added = np.zeros((*lead, L, S))
    if is_causal:
        allowed &= np.array([[j <= i for j in range(S)] for i in range(L)])  # top-left aligned
    if mask is not None:
        m = mask.detach().cpu()
        if m.dtype == torch.bool:
            allowed &= np.broadcast_to(m.numpy(), (*lead, L, S))
        else:
            m64 = np.broadcast_to(m.double().numpy(), (*lead, L, S))
            allowed &= ~np.isneginf(m64)
            added = np.where(np.isneginf(m64), 0.0, m64)
    allowed = allowed.reshape(-1, L, S)
    added = added.reshape(-1, L, S)
    s = 1.0 / math.sqrt(E) if scale is None else scale

    weights = np.zeros((qb.shape[0], L, S))
    out = np.zeros((qb.shape[0], L, Ev))
    for b in range(qb.shape[0]):
        for i in range(L):
            logits = [
                float(np.dot(qb[b, i], kb[b, j])) * s + added[b, i, j] if allowed[b, i, j] else NEG_INF
                for j in range(S)
            ]
            top = max(logits)
            if top == NEG_INF:
                continue  # no key may be attended: zero weights, zero output
            e = [math.exp(x - top) for x in logits]
            total = math.fsum(e)
            for j in range(S):
                weights[b, i, j] = e[j] / total
                out[b, i] += weights[b, i, j] * vb[b, j]
    return weights.reshape(*lead, L, S), out.reshape(*lead, L, Ev)


def max_err(x: torch.Tensor, ref: np.ndarray) -> float:
    return float(np.abs(x.detach().cpu().double().numpy() - ref).max())
