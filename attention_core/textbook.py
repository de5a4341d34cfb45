"""The attention people write, the benchmark's ``textbook`` entry and the baseline of FlashAttention's rule
(:mod:`.accuracy`), and its float64 answer. Arguments, shapes and the two departures from torch (a fully masked
row gives zeros, an overflow raises) as :mod:`.attention`'s, without dropout: ``q (N, ..., L, E)``,
``k (N, ..., S, E)``, ``v (N, ..., S, Ev)`` → ``(N, ..., L, Ev)``, in the inputs' dtype and on their device.
"""

from __future__ import annotations

import torch

from .attention import check_attention_args, overflow_error
from .masks import causal_mask
from .validation import all_finite


def textbook_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None = None, is_causal: bool = False, *, scale: float | None = None,
) -> torch.Tensor:  # fmt: skip
    """softmax(Q Kᵀ · scale + mask) V as tutorials write it; ``scale`` defaults to 1/√E."""
    s, _ = check_attention_args(q, k, v, attn_mask, 0.0, is_causal, scale)
    output = _textbook_attention(q, k, v, attn_mask, is_causal, s)
    if not all_finite(output):  # an overflowed score left NaN (a masked row is 0, never NaN)
        raise overflow_error(output.dtype)
    return output


def reference_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None = None, is_causal: bool = False, *, scale: float | None = None,
) -> torch.Tensor:  # fmt: skip
    """:func:`textbook_attention` in float64 on the inputs' device: what every implementation is checked against."""
    check_attention_args(q, k, v, attn_mask, 0.0, is_causal, scale)  # the inputs as given, before the cast
    return textbook_attention(q.double(), k.double(), v.double(), attn_mask, is_causal, scale=scale)


def _textbook_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None, is_causal: bool, scale: float
) -> torch.Tensor:
    """The body, unchecked: the benchmark times it as ``textbook``, since checks are not what people write."""
    scores = q @ k.transpose(-2, -1) * scale  # (N, ..., L, E) @ (N, ..., E, S) -> (N, ..., L, S)
    mask = causal_mask(q.shape[-2], k.shape[-2], device=q.device) if is_causal else attn_mask  # (L, S) or the caller's
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))  # (N, ..., L, S)
    elif mask is not None:
        scores = scores + mask.to(scores.dtype)  # (N, ..., L, S)
    weights = torch.softmax(scores, dim=-1)  # (N, ..., L, S)
    if attn_mask is not None:  # a fully masked row: softmax of all −inf is NaN, the answer is 0
        is_bool = attn_mask.dtype == torch.bool
        blocked = attn_mask.logical_not() if is_bool else torch.isneginf(attn_mask.to(scores.dtype))  # (..., L, S)
        weights = weights.masked_fill(blocked.all(dim=-1, keepdim=True), 0.0)  # (N, ..., L, S)
    return weights @ v  # (N, ..., L, S) @ (N, ..., S, Ev) -> (N, ..., L, Ev)
