"""FlashAttention's acceptance rule: a relative yardstick, since the error a dtype allows depends on the inputs.

    error(impl) ≤ 2 × error(textbook attention) + one ulp at the output's scale

Both errors are the largest |output − float64 reference| (:func:`.reference_attention`), textbook attention
(:func:`.textbook_attention`) running in the same dtype on the same device. The ulp keeps a baseline that is
exact on a tiny problem from demanding exactness of everyone else.

For gradients (:func:`gradient_rule`) each of dQ, dK, dV is judged so, both by autograd on the same inputs and
dO. The ulp floor is taken at the scale of all three: with a single key dQ and dK are exactly 0, which the
textbook backward gets exactly while FlashAttention-2's ``D = rowsum(dO ∘ O)`` leaves a tiny rounding error.

One exception, in float32 (:meth:`GradientCheck.passes_beside`): on nearly one-hot rows (the first causal
queries) the textbook backward cancels exactly while a fused backward's D leaves a few ulps of dP, so torch's
own fused SDPA fails the plain rule too (by up to 2.5× on ``(2, 4, n, 64)``, causal, ten seeds); a float32
gradient may then be held to 2× the larger of textbook attention's error and torch SDPA's.

The gradients' reference builds the ``L × S`` weights: keep ``L · S`` modest. A float mask that blocks a whole
row gives textbook attention a NaN gradient; block such rows with a bool mask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from .attention import check_attention_args
from .textbook import reference_attention, textbook_attention
from .validation import check_tensor

FLASH_FACTOR = 2.0  # FlashAttention's tests allow twice the error of the plain PyTorch baseline


@dataclass(frozen=True)
class AccuracyCheck:
    """The two errors against float64 and the verdict of FlashAttention's rule."""

    error: float  # max |output − float64 reference|
    baseline_error: float  # max |textbook attention in the same dtype − float64 reference|
    floor: float  # one unit in the last place at the output's scale
    dtype: str = ""

    @property
    def bound(self) -> float:
        return FLASH_FACTOR * self.baseline_error + self.floor

    @property
    def passes(self) -> bool:
        return self.error <= self.bound

    @property
    def ratio(self) -> float:
        """error ÷ baseline error (0 when both are 0)."""
        if self.baseline_error > 0:
            return self.error / self.baseline_error
        return 0.0 if self.error == 0 else float("inf")

    @classmethod
    def judge(cls, out: torch.Tensor, base: torch.Tensor, ref: torch.Tensor, floor: float) -> AccuracyCheck:
        """Compare ``out`` and the textbook ``base`` (both in the inputs' dtype) with the float64 ``ref``."""
        error = float((out.to(device=ref.device, dtype=torch.float64) - ref).abs().max())
        baseline_error = float((base.double() - ref).abs().max())
        return cls(error, baseline_error, floor, str(base.dtype).removeprefix("torch."))

    def describe(self) -> str:
        verdict = "pass" if self.passes else "FAIL"
        return (
            f"{self.error:.2e} vs float64, {self.ratio:.2f}× textbook attention in {self.dtype} "
            f"({self.baseline_error:.2e}): {verdict}"
        )


def flash_rule(
    out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None = None, is_causal: bool = False,
    *, scale: float | None = None, rows: torch.Tensor | None = None,
) -> AccuracyCheck:  # fmt: skip
    """Judge ``out (N, ..., L, Ev)``, some attention on ``q, k, v``, by FlashAttention's rule, on the inputs' device.

    ``rows`` (1-D indices into L) checks only those queries, against every key, so the float64 scores need
    not fit in memory at large n; ``is_causal`` keeps its meaning (query i sees keys 0..i) for them.
    """
    check_attention_args(q, k, v, attn_mask, 0.0, is_causal, scale)
    L, S = q.shape[-2], k.shape[-2]
    if out.shape[-2] != L:
        raise ValueError(f"out must have the queries' length L = {L} on its second-last axis, got {tuple(out.shape)}")
    mask = attn_mask
    if rows is not None:
        rows = rows.to(device=q.device, dtype=torch.long)
        if rows.dim() != 1 or rows.numel() == 0 or int(rows.min()) < 0 or int(rows.max()) >= L:
            raise ValueError(f"rows must be a non-empty 1-D index into the {L} queries")
        if is_causal:
            keys = torch.arange(S, device=q.device)  # (S,)
            mask, is_causal = keys <= rows.unsqueeze(-1), False  # (R, S): row i sees keys 0..i, top-left aligned
        elif attn_mask is not None:  # expanded to (..., L, S) first: a 1-D (S,) mask has no query axis to index
            mask = attn_mask.expand(*attn_mask.shape[:-2], L, S)[..., rows, :]  # (..., R, S)
        q = q[..., rows, :]  # (N, ..., R, E)
        out = out[..., rows, :]  # (N, ..., R, Ev)
    ref = reference_attention(q, k, v, mask, is_causal, scale=scale)  # (N, ..., R, Ev), float64
    base = textbook_attention(q, k, v, mask, is_causal, scale=scale)  # (N, ..., R, Ev), in q's dtype
    return AccuracyCheck.judge(out, base, ref, ulp_floor(q.dtype, ref))


def ulp_floor(dtype: torch.dtype, *refs: torch.Tensor) -> float:
    """One unit in the last place of ``dtype`` at the scale of the float64 ``refs``: eps · max |ref|."""
    return torch.finfo(dtype).eps * max(max(float(ref.abs().max()) for ref in refs), 1e-30)


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
        return torch.autograd.grad(out, leaves, grad_out.to(dtype))  # (dQ, dK, dV)


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
        """The rule, or in float32 its exception (module note); ``fused``: torch SDPA's gradients on these inputs."""
        if self.passes:
            return True
        if self.dq.dtype != "float32":
            return False
        pairs = zip(self, fused, strict=True)
        return all(mine.error <= FLASH_FACTOR * max(mine.baseline_error, theirs.error) + mine.floor
                   for mine, theirs in pairs)  # fmt: skip

    def describe(self) -> str:
        named = zip(("dQ", "dK", "dV"), self, strict=True)
        return "; ".join(f"{name} {check.describe()}" for name, check in named)


def gradient_rule(
    grads: Grads, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, grad_out: torch.Tensor,
    attn_mask: torch.Tensor | None = None, is_causal: bool = False,
    *, scale: float | None = None, textbook: Attention = textbook_attention,
) -> GradientCheck:  # fmt: skip
    """Judge ``grads = (dQ, dK, dV)`` of some attention on ``q, k, v`` and upstream ``grad_out``, on the inputs' device.

    The baseline is ``textbook`` attention's autograd in ``q``'s dtype; with fewer K/V heads than query heads,
    pass one that repeats K and V to every query head first, so dK and dV are the sums over each group.
    """
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
    return GradientCheck(*(AccuracyCheck.judge(g, b, r, floor) for g, b, r in triples))
