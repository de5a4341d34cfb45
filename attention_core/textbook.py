"""The attention people write, and its float64 answer.

:func:`textbook_attention` is softmax(Q Kᵀ · scale + mask) V in plain torch ops, in the inputs'
dtype and on their device: the benchmark's ``textbook`` entry and the baseline of FlashAttention's
accuracy rule (:mod:`.accuracy`). :func:`reference_attention` is the same arithmetic in float64,
the answer every implementation is checked against.

Shapes and mask semantics as torch's SDPA: ``q (N, ..., L, E)``, ``k (N, ..., S, E)``,
``v (N, ..., S, Ev)`` → ``(N, ..., L, Ev)``; a bool mask is ``True`` where attending is allowed,
a float mask is added; ``is_causal`` is top-left aligned. A fully masked row gives zeros, as the
fused kernels do (``torch.softmax`` alone would give NaN); the zeroing runs only when a mask is
given, since a causal row always keeps key 0.
"""

from __future__ import annotations

import torch

from .attention import check_attention_args
from .masks import causal_mask


def textbook_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    *,
    scale: float | None = None,
) -> torch.Tensor:
    """softmax(Q Kᵀ · scale + mask) V as tutorials write it; ``scale`` defaults to 1/√E."""
    s, _ = check_attention_args(q, k, v, attn_mask, 0.0, is_causal, scale)
    return _textbook_attention(q, k, v, attn_mask, is_causal, s)


def reference_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    *,
    scale: float | None = None,
) -> torch.Tensor:
    """:func:`textbook_attention` in float64 on the inputs' device: the answer to check others against."""
    s, _ = check_attention_args(q, k, v, attn_mask, 0.0, is_causal, scale)
    return _textbook_attention(q.double(), k.double(), v.double(), attn_mask, is_causal, s)


def _textbook_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None, is_causal: bool, scale: float
) -> torch.Tensor:
    """The body, unchecked: the benchmark times it as ``textbook``, since checks are not what people write."""
    scores = q @ k.transpose(-2, -1) * scale  # (N, ..., L, E) @ (N, ..., E, S) -> (N, ..., L, S)
    if is_causal:
        allowed = causal_mask(q.shape[-2], k.shape[-2], device=q.device)  # (L, S)
        scores = scores.masked_fill(~allowed, float("-inf"))  # (N, ..., L, S)
    elif attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))  # (N, ..., L, S)
        else:
            scores = scores + attn_mask.to(scores.dtype)  # (N, ..., L, S)
    weights = torch.softmax(scores, dim=-1)  # (N, ..., L, S)
    if attn_mask is not None:
        weights = weights.nan_to_num(0.0)  # a fully masked row: softmax of all −inf is NaN, the answer is 0
    return weights @ v  # (N, ..., L, S) @ (N, ..., S, Ev) -> (N, ..., L, Ev)
