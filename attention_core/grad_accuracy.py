"""FlashAttention's acceptance rule (:mod:`.accuracy`) for gradients: each of dQ, dK, dV within 2 × textbook
attention's error against float64, both by autograd on the same inputs and dO. The ulp floor is taken at the scale
of all three: with a single key dQ and dK are exactly 0, which the textbook backward gets exactly while
FlashAttention-2's ``D = rowsum(dO ∘ O)`` leaves a tiny rounding error.

One exception, in float32 (:meth:`GradientCheck.passes_beside`): on nearly one-hot rows (the first causal
queries) the textbook backward cancels exactly while a fused backward's D leaves a few ulps of dP, so torch's
own fused SDPA fails the plain rule too (by up to 2.5× on ``(2, 4, n, 64)``, causal, ten seeds); a float32
gradient may then be held to 2× the larger of textbook attention's error and torch SDPA's.

The reference builds the ``L × S`` weights: keep ``L · S`` modest. A float mask that blocks a whole row gives
textbook attention a NaN gradient; block such rows with a bool mask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from .accuracy import FLASH_FACTOR, AccuracyCheck, ulp_floor
from .attention import check_attention_args
from .textbook import textbook_attention
from .validation import check_float, check_tensor

Attention = Callable[..., torch.Tensor]  # attention(q, k, v, attn_mask=..., is_causal=..., scale=...)
Grads = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # (dQ, dK, dV)


def attention_grads(
    attention: Attention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, grad_out: torch.Tensor,
    attn_mask: torch.Tensor | None = None, is_causal: bool = False,
    *, scale: float | None = None, dtype: torch.dtype | None = None,
) -> Grads:  # fmt: skip
    """dQ, dK, dV (shaped as ``q, k, v``) of ``attention(q, k, v, …)`` for ``grad_out (N, ..., L, Ev)``, by autograd.

    The leaves are fresh copies of ``q, k, v`` (cast to ``dtype`` when given): the inputs keep no ``.grad``.
    """
    dtype = q.dtype if dtype is None else dtype
    leaves = [x.detach().to(dtype).requires_grad_(True) for x in (q, k, v)]
    with torch.enable_grad():
        out = attention(*leaves, attn_mask=attn_mask, is_causal=is_causal, scale=scale)  # (N, ..., L, Ev)
        if out.shape != grad_out.shape:
            raise ValueError(f"grad_out must have the output's shape {tuple(out.shape)}, got {tuple(grad_out.shape)}")
        dq, dk, dv = torch.autograd.grad(out, leaves, grad_out.to(dtype))
    return dq, dk, dv


class GradientCheck(NamedTuple):
    """FlashAttention's rule applied to each of dQ, dK and dV (iterating gives the three checks)."""

    dq: AccuracyCheck
    dk: AccuracyCheck
    dv: AccuracyCheck

    @property
    def passes(self) -> bool:
        return all(check.passes for check in self)

    @property
    def errors(self) -> dict[str, float]:
        """The max abs errors against float64, keyed as the benchmark's columns."""
        return {"err_dq": self.dq.error, "err_dk": self.dk.error, "err_dv": self.dv.error}

    def passes_beside(self, fused: GradientCheck) -> bool:
        """The rule, or in float32 its exception (module note): each error within ``factor`` × the larger
        of textbook attention's error and ``fused``'s (torch SDPA's gradients on the same inputs)."""
        if self.passes:
            return True
        if self.dq.dtype != "float32":
            return False
        pairs = zip(self, fused, strict=True)
        return all(mine.error <= mine.factor * max(mine.baseline_error, theirs.error) + mine.floor
                   for mine, theirs in pairs)  # fmt: skip

    def describe(self) -> str:
        named = zip(("dQ", "dK", "dV"), self, strict=True)
        return "; ".join(f"{name} {check.describe()}" for name, check in named)


def gradient_rule(
    grads: Grads, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, grad_out: torch.Tensor,
    attn_mask: torch.Tensor | None = None, is_causal: bool = False,
    *, scale: float | None = None, factor: float = FLASH_FACTOR, textbook: Attention = textbook_attention,
) -> GradientCheck:  # fmt: skip
    """Judge ``grads = (dQ, dK, dV)`` of some attention on ``q, k, v`` and upstream ``grad_out``, on the inputs' device.

    The baseline is ``textbook`` attention's autograd in ``q``'s dtype; with fewer K/V heads than query heads,
    pass one that repeats K and V to every query head first, so dK and dV are the sums over each group.
    """
    factor = check_float("factor", factor, low=1.0)
    if textbook is textbook_attention:  # another baseline checks its own arguments when it runs
        check_attention_args(q, k, v, attn_mask, 0.0, is_causal, scale)
    check_tensor("grad_out", grad_out, min_dim=2)
    for name, grad, x in zip(("dq", "dk", "dv"), grads, (q, k, v), strict=True):
        if grad.shape != x.shape:
            raise ValueError(f"{name} must have the shape of its input {tuple(x.shape)}, got {tuple(grad.shape)}")
    args = (q, k, v, grad_out, attn_mask, is_causal)
    reference = attention_grads(textbook, *args, scale=scale, dtype=torch.float64)
    baseline = attention_grads(textbook, *args, scale=scale)
    floor = ulp_floor(q.dtype, *reference)
    triples = zip(grads, baseline, reference, strict=True)
    return GradientCheck(*(AccuracyCheck.judge(g, b, r, floor, factor) for g, b, r in triples))
