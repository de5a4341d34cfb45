"""Scaled dot-product attention, written out in its five steps.

    scores  = Q Kᵀ                      (..., L, S)
    scaled  = scores · scale            (..., L, S)   scale = 1/√E by default
    masked  = scaled, −inf where blocked (or + a float mask)
    weights = softmax(masked) per row   (..., L, S)
    output  = weights V                 (..., L, Ev)

Every entry point of the core takes torch SDPA's arguments, ``(q, k, v, attn_mask, dropout_p, is_causal,
*, scale)``, checked by :func:`check_attention_args` with torch's rules: shapes ``(N, ..., L, E)``,
``(N, ..., S, E)``, ``(N, ..., S, Ev)`` with broadcast leading dims; a bool mask is ``True`` where attending
is allowed, a float mask is added; ``is_causal`` is top-left aligned when L ≠ S; ``scale`` is keyword-only and
any finite number; ``dropout_p`` may be 1 (the output is 0); only E = 0 of the sizes is refused. Two
departures, to avoid a silent wrong number: a fully masked row gives zeros (as torch's fused kernels do), never
NaN; scores that overflow the dtype raise. :func:`attention_trace` (the explained path) keeps every
intermediate; :func:`dot_product_attention` (the lean path) costs what the textbook code costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .masks import causal_mask
from .validation import all_finite, any_true, broadcast_shapes, check_float, check_same_device, check_tensor


@dataclass(frozen=True)
class AttentionTrace:
    """Every intermediate of one attention call, named and shaped as in the module note; ``mask`` the mask applied
    (the causal one when ``is_causal``) or ``None``; ``dropout_keep`` the bool keep-pattern when dropout ran, else
    ``None``; ``dropped`` the weights after dropout and its 1/(1−p) rescaling (``weights`` itself without dropout)."""

    scores: torch.Tensor
    scaled: torch.Tensor
    masked: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor
    scale: float
    mask: torch.Tensor | None
    dropout_p: float
    dropout_keep: torch.Tensor | None
    dropped: torch.Tensor

    @property
    def fully_masked_rows(self) -> torch.Tensor:
        """Bool ``(N, ..., L)``: rows in which no key may be attended to."""
        return torch.isneginf(self.masked).all(dim=-1)


def stable_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax with the row maximum subtracted first, so ``exp`` never overflows; an all −inf slice (every key
    masked) gives zeros, not NaN."""
    check_tensor("x", x, min_dim=1, finite=False)
    if any_true(torch.isnan(x)) or any_true(torch.isposinf(x)):
        raise ValueError("x must not contain NaN or +inf; −inf (a masked entry) is allowed")
    if x.shape[dim] == 0:
        return x.clone()  # a row with no entries: nothing to normalise
    row_max = x.amax(dim=dim, keepdim=True)
    row_max = torch.where(torch.isneginf(row_max), torch.zeros_like(row_max), row_max)
    e = torch.exp(x - row_max)  # every exponent ≤ 0, so e ∈ [0, 1]
    total = e.sum(dim=dim, keepdim=True)
    return torch.where(total > 0, e / total.clamp_min(torch.finfo(x.dtype).tiny), torch.zeros_like(e))


def row_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) of each row of ``weights (..., n)``, with 0·log 0 = 0. Returns ``(...)``."""
    check_tensor("weights", weights, min_dim=1)
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def check_attention_args(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None, dropout_p: float, is_causal: bool, scale: float | None,
    *, positive_scale: bool = False, min_length: int = 0,
) -> tuple[float, float]:  # fmt: skip
    """Check torch SDPA's arguments (module docstring) with the same ``ValueError`` on every path; return
    ``(scale, dropout_p)``. Routes may ask for a ``positive_scale`` (random features estimate exp(scale·q·k)
    through √scale) and ``min_length`` queries and keys."""
    check_tensor("q", q, min_dim=2)
    check_tensor("k", k, min_dim=2)
    check_tensor("v", v, min_dim=2)
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    check_same_device(q=q, k=k, v=v, attn_mask=attn_mask)  # a mask that is no tensor is refused below
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same feature size E: q is (..., L, E={q.shape[-1]}), "
            f"k is (..., S, E={k.shape[-1]})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys S: k is (..., S={k.shape[-2]}, E), "
            f"v is (..., S={v.shape[-2]}, Ev)"
        )
    if q.shape[-1] == 0:
        raise ValueError("the feature size E (d_k) must be > 0")
    if min_length and (q.shape[-2] < min_length or k.shape[-2] < min_length):
        raise ValueError(
            f"q needs at least {min_length} query and k at least {min_length} key, "
            f"got L={q.shape[-2]} and S={k.shape[-2]}"
        )
    try:
        batch = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch, head) dims of q {tuple(q.shape[:-2])}, k {tuple(k.shape[:-2])} "
            f"and v {tuple(v.shape[:-2])} must broadcast"
        ) from None
    if attn_mask is not None:
        if is_causal:
            raise ValueError("pass either attn_mask or is_causal=True, not both")
        if not isinstance(attn_mask, torch.Tensor):
            raise ValueError(f"attn_mask must be a torch.Tensor or None, got {type(attn_mask).__name__}")
        if attn_mask.dtype != torch.bool:
            if not attn_mask.dtype.is_floating_point:
                raise ValueError(f"attn_mask must be bool (True = may attend) or float (added), got {attn_mask.dtype}")
            if any_true(torch.isnan(attn_mask)) or any_true(torch.isposinf(attn_mask)):
                raise ValueError("a float attn_mask must not contain NaN or +inf (−inf blocks a key)")
        target = (*batch, q.shape[-2], k.shape[-2])
        try:
            if broadcast_shapes(attn_mask.shape, target) != target:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to the scores' "
                f"shape (..., L, S) = {target}"
            ) from None
    p = check_float("dropout_p", dropout_p, low=0.0, high=1.0)
    if scale is None:
        s = 1.0 / math.sqrt(q.shape[-1])
    else:
        s = check_float("scale", scale, low=0.0 if positive_scale else None, low_open=positive_scale)
    return s, p


def keep_scale(p: float) -> float:
    """What dropout multiplies the surviving weights by: 1/(1 − p), and 0 at p = 1 (every weight dropped,
    so the output is 0, as torch's)."""
    return 1.0 / (1.0 - p) if p < 1.0 else 0.0


def attention_trace(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False,
    *, scale: float | None = None, generator: torch.Generator | None = None,
) -> AttentionTrace:  # fmt: skip
    """Run attention step by step and keep every intermediate: ``q (N, ..., L, E)``, ``k (N, ..., S, E)``,
    ``v (N, ..., S, Ev)`` and the rest as torch SDPA's (module note); ``generator`` seeds the dropout pattern."""
    s, p = check_attention_args(q, k, v, attn_mask, dropout_p, is_causal, scale)
    L, S = q.shape[-2], k.shape[-2]
    mask = causal_mask(L, S, device=q.device) if is_causal else attn_mask  # (L, S) or user's

    scores = q @ k.transpose(-2, -1)  # (N, ..., L, E) @ (N, ..., E, S) -> (N, ..., L, S)
    scaled = scores * s  # (N, ..., L, S)
    if not all_finite(scaled):  # finite inputs can still overflow (float16 tops out near 65504)
        raise overflow_error(scaled.dtype)
    if mask is None:
        masked = scaled
    elif mask.dtype == torch.bool:
        masked = scaled.masked_fill(mask.logical_not(), float("-inf"))  # (N, ..., L, S)
    else:
        masked = scaled + mask.to(scaled.dtype)  # (N, ..., L, S)
    weights = stable_softmax(masked, dim=-1)  # (N, ..., L, S)

    keep: torch.Tensor | None = None
    dropped = weights
    if p > 0.0:
        keep = torch.rand(weights.shape, generator=generator, device=weights.device) >= p  # (N, ..., L, S)
        dropped = weights * keep * keep_scale(p)  # survivors rescaled so the expectation is unchanged
    output = dropped @ v  # (N, ..., L, S) @ (N, ..., S, Ev) -> (N, ..., L, Ev)
    return AttentionTrace(scores, scaled, masked, weights, output, s, mask, p, keep, dropped)


def dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False,
    *, scale: float | None = None, generator: torch.Generator | None = None,
) -> torch.Tensor:  # fmt: skip
    """softmax(Q Kᵀ · scale + mask) V in one call: the lean materialising path, ``(N, ..., L, Ev)``.

    Arguments as :func:`attention_trace` (the same ``generator`` drops the same weights). Only the inputs
    are checked, never the scores; the mask and dropout work in place; an overflow is caught from the output.
    """
    s, p = check_attention_args(q, k, v, attn_mask, dropout_p, is_causal, scale)
    L, S = q.shape[-2], k.shape[-2]
    scores = (q * s) @ k.transpose(-2, -1)  # (N, ..., L, E) @ (N, ..., E, S) -> (N, ..., L, S)
    dead: torch.Tensor | None = None  # (..., L): rows whose every key is masked
    if is_causal:
        blocked = torch.ones(L, S, dtype=torch.bool, device=q.device).triu_(1)  # (L, S), top-left aligned
        scores.masked_fill_(blocked, float("-inf"))  # row i keeps key 0, so no row is fully masked
    elif attn_mask is not None:
        in_place = broadcast_shapes(scores.shape, attn_mask.shape) == tuple(scores.shape)
        # Fully masked rows are found from the mask (O(mask), not O(scores)) and left unmasked,
        # so softmax never sees a row of −inf (NaN, and NaN gradients); their output is zeroed below.
        if attn_mask.dtype == torch.bool:
            blocked = attn_mask.logical_not()
            dead = blocked.all(dim=-1)  # (..., L)
            if any_true(dead):
                blocked = blocked & dead.unsqueeze(-1).logical_not()
            fill = scores.masked_fill_ if in_place else scores.masked_fill
            scores = fill(blocked, float("-inf"))  # (N, ..., L, S)
        else:
            added = attn_mask.to(scores.dtype)  # a float64 −1e300 becomes −inf in float32, as in the trace
            dead = torch.isneginf(added).all(dim=-1)  # (..., L)
            if any_true(dead):
                added = added.masked_fill(dead.unsqueeze(-1), 0.0)
            scores = scores.add_(added) if in_place else scores + added  # (N, ..., L, S)
    weights = torch.softmax(scores, dim=-1)  # (N, ..., L, S)
    del scores
    if p > 0.0:
        keep = torch.rand(weights.shape, generator=generator, device=weights.device) >= p  # (N, ..., L, S)
        # in place, unless autograd needs softmax's output as it was
        weights = weights * keep * keep_scale(p) if weights.requires_grad else weights.mul_(keep).mul_(keep_scale(p))
    output = weights @ v  # (N, ..., L, S) @ (N, ..., S, Ev) -> (N, ..., L, Ev)
    if dead is not None and any_true(dead):
        output = output.masked_fill(dead.unsqueeze(-1), 0.0)  # (N, ..., L, Ev)
    if not all_finite(output):
        raise overflow_error(output.dtype)
    return output


def overflow_error(dtype: torch.dtype, what: str = "the scaled scores Q·Kᵀ·scale") -> ValueError:
    """The error every path raises when finite inputs give a number too large for ``dtype``."""
    return ValueError(f"{what} overflowed {dtype}; use a wider dtype, smaller inputs or scale")
