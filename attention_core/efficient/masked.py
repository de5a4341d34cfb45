"""Attention under a sparse pattern, three ways, one result.

- ``"dense"``: this project's core, :func:`attention_core.attention.dot_product_attention`,
  with the pattern as a dense boolean mask: the reference, for small n;
- ``"sdpa"``: torch's fused ``F.scaled_dot_product_attention`` with the same dense mask: what
  people write for a window before FlexAttention, and still n² work and an n² mask;
- ``"flex"``: FlexAttention under ``torch.compile`` with a block mask: only the tiles the
  pattern touches are computed (:mod:`.flex`).

A query row that the pattern leaves with no key gives zeros on every backend, as the project's
core and torch's fused kernels do (torch's reference softmax would give NaN). The patterns of
:mod:`.patterns` always leave each query its own position or the global tokens, so this only
happens with hand-written patterns.

When ``"flex"`` cannot compile here (no C++ compiler, say), the call runs ``"sdpa"`` and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..attention import check_attention_args, dot_product_attention, overflow_error
from ..validation import all_finite, any_true, broadcast_shapes, check_choice
from .flex import FlexPlan, FlexUnavailable, flex_plan
from .patterns import MaskMod, check_pattern, dense_mask

BACKENDS = ("dense", "sdpa", "flex")


@dataclass(frozen=True)
class MaskedAttention:
    """The output ``(N, ..., L, Ev)``, the ``backend`` that ran, and ``fallback``: why it is not the one
    asked for (``None`` when it is). A flex run keeps its ``plan``: what the compile and the block mask
    cost, and whether this call paid them (``None`` on the dense paths).
    """

    output: torch.Tensor
    backend: str
    fallback: str | None = None
    plan: FlexPlan | None = None


def _flat4(x: torch.Tensor, lead: torch.Size) -> torch.Tensor:
    """``(N, ..., L, E)`` broadcast to ``lead`` and folded into FlexAttention's ``(B, H, L, E)``."""
    return x.expand(*lead, *x.shape[-2:]).reshape(-1, lead[-1] if lead else 1, *x.shape[-2:])  # (B, H, L, E)


def masked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask_mod: MaskMod,
    *,
    backend: str = "dense",
    scale: float | None = None,
) -> MaskedAttention:
    """softmax(Q Kᵀ · scale, restricted to the pattern) V on the chosen ``backend`` (module docstring).

    ``q (N, ..., L, E)``, ``k (N, ..., S, E)``, ``v (N, ..., S, Ev)``, leading dims broadcast as torch's SDPA;
    ``mask_mod`` a pattern of :mod:`.patterns` or any ``(b, h, q_idx, kv_idx) -> bool`` function that ignores
    ``b`` and ``h``; ``scale`` defaults to ``1/√E``. The flex path is forward-only: no gradient.
    """
    backend = check_choice("backend", backend, BACKENDS)
    s, _ = check_attention_args(q, k, v, None, 0.0, False, scale, positive_scale=True, min_length=1)
    n_q, n_k = check_pattern(mask_mod, q.shape[-2], k.shape[-2])
    fallback = None
    if backend == "flex":
        lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        q4, k4, v4 = (_flat4(x, lead) for x in (q, k, v))
        try:
            plan = flex_plan(q4, k4, v4, mask_mod, scale=s)
        except FlexUnavailable as exc:
            fallback = str(exc)
        else:
            out = plan.run(q4, k4, v4)  # (B, H, L, Ev)
            return MaskedAttention(out.reshape(*lead, n_q, v.shape[-1]), "flex", plan=plan)
    mask = dense_mask(mask_mod, n_q, n_k, device=q.device)  # (L, S)
    if backend == "dense":
        return MaskedAttention(dot_product_attention(q, k, v, mask, scale=s), "dense")
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=s)  # (N, ..., L, Ev)
    dead = mask.any(dim=-1).logical_not()  # (L,): queries with no key
    if any_true(dead):
        out = out.masked_fill(dead[:, None], 0.0)  # some torch kernels give NaN there; zeros, as our core
    if not all_finite(out):
        raise overflow_error(out.dtype)
    return MaskedAttention(out, "sdpa", fallback)
