"""The scores that name a head's job, each checkable by hand on a pattern you can see.

- **previous-token score**: the mean weight a query puts on the token just before it. A head that
  always looks one step back scores 1.
- **prefix-matching (induction) score**: on a sequence whose second half repeats its first, the mean
  weight a query in the repeat puts on the token *after* the earlier copy of itself: position
  ``i − half + 1``. A perfect induction head scores 1. (Olsson et al. 2022 call this prefix matching.)
- **copying score**: read each token's embedding through a head's value and output weights and the
  unembedding (its OV circuit, Elhage et al. 2021): the share of tokens whose own logit comes out on
  top. A head that copies what it attends to scores 1; one that writes nothing useful scores about 1/V.
"""

from __future__ import annotations

import torch

from ..validation import check_int, check_tensor
from .model import InductionWeights


def _check_pattern(weights: object) -> torch.Tensor:
    w = check_tensor("weights", weights, min_dim=2)
    if w.shape[-1] != w.shape[-2]:
        raise ValueError(f"weights must be self-attention weights (..., L, L), got {tuple(w.shape)}")
    return w


def _mean_over_batch(per_query: torch.Tensor) -> torch.Tensor:
    """``(N, ..., n)`` → ``(...)``: the mean over the batch (first) axis and the queries (last)."""
    per_query = per_query.mean(dim=-1)  # (N, ...)
    return per_query.mean(dim=0) if per_query.dim() > 0 else per_query


def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """Mean weight on key ``i − 1`` over queries ``i = 1 … L−1``: ``weights (N, ..., L, L)`` → ``(...)``.

    With a head axis, ``(N, H, L, L)`` gives one score per head ``(H,)``.
    """
    w = _check_pattern(weights)
    if w.shape[-1] < 2:
        raise ValueError("the previous-token score needs at least 2 tokens")
    return _mean_over_batch(w.diagonal(offset=-1, dim1=-2, dim2=-1))  # diagonal (N, ..., L−1)


def prefix_matching_score(weights: torch.Tensor, half: int) -> torch.Tensor:
    """Mean weight on key ``i − half + 1`` over the repeat's queries ``i = half … 2·half − 1``.

    ``weights (N, ..., 2·half, 2·half)`` of a sequence that repeats its first ``half`` tokens → ``(...)``.
    """
    w = _check_pattern(weights)
    half = check_int("half", half, low=2)
    if w.shape[-1] != 2 * half:
        raise ValueError(f"weights must cover 2·half = {2 * half} tokens, got {w.shape[-1]}")
    stripe = w.diagonal(offset=-(half - 1), dim1=-2, dim2=-1)  # (N, ..., half + 1): query i, key i − half + 1
    return _mean_over_batch(stripe[..., 1:])  # queries half … 2·half − 1


def ov_logits(weights: InductionWeights, layer: int, head: int) -> torch.Tensor:
    """``(V, V)``: row s holds the logits a head writes (directly, through W_U) when it attends to token s.

    W_E[s] · W_V,h · W_O,h · W_U, with h's slice of the value and output weights.
    """
    cfg = weights.config
    layer = check_int("layer", layer, low=0, high=cfg.layers - 1)
    head = check_int("head", head, low=0, high=cfg.n_heads - 1)
    lw, cols = weights.layers[layer], slice(head * cfg.d_head, (head + 1) * cfg.d_head)
    ov = lw.w_v[:, cols] @ lw.w_o[cols, :]  # (D, d_k) @ (d_k, D) -> (D, D)
    return weights.embed @ ov @ weights.unembed  # (V, D) @ (D, D) @ (D, V) -> (V, V)


def copying_score(logits: torch.Tensor) -> float:
    """The share of rows of ``logits (V, V)`` whose largest entry is on the diagonal (ties count against)."""
    m = check_tensor("logits", logits, min_dim=2)
    if m.dim() != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"logits must be square (V, V), got {tuple(m.shape)}")
    diag = m.diagonal()  # (V,)
    others = m.masked_fill(torch.eye(m.shape[0], dtype=torch.bool, device=m.device), float("-inf"))  # (V, V)
    return float((diag > others.amax(dim=-1)).float().mean())


def copying_scores(weights: InductionWeights) -> torch.Tensor:
    """Every head's :func:`copying_score`, ``(layers, H)`` float64 on the CPU."""
    cfg = weights.config
    with torch.no_grad():
        return torch.tensor(
            [[copying_score(ov_logits(weights, i, h)) for h in range(cfg.n_heads)] for i in range(cfg.layers)],
            dtype=torch.float64,
        )
