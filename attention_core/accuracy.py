"""FlashAttention's acceptance rule: a relative yardstick, since the error a dtype allows depends on the inputs.

    error(impl) ≤ 2 × error(textbook attention) + one ulp at the output's scale

Both errors are the largest |output − float64 reference| (:func:`.reference_attention`), textbook attention
(:func:`.textbook_attention`) running in the same dtype on the same device. The ulp keeps a baseline that is
exact on a tiny problem from demanding exactness of everyone else.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .attention import check_attention_args
from .textbook import reference_attention, textbook_attention
from .validation import check_float

FLASH_FACTOR = 2.0  # FlashAttention's tests allow twice the error of the plain PyTorch baseline


@dataclass(frozen=True)
class AccuracyCheck:
    """The two errors against float64 and the verdict of FlashAttention's rule."""

    error: float  # max |output − float64 reference|
    baseline_error: float  # max |textbook attention in the same dtype − float64 reference|
    floor: float  # one unit in the last place at the output's scale
    factor: float = FLASH_FACTOR
    dtype: str = ""

    @property
    def bound(self) -> float:
        return self.factor * self.baseline_error + self.floor

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
    def judge(
        cls, out: torch.Tensor, base: torch.Tensor, ref: torch.Tensor, floor: float, factor: float = FLASH_FACTOR
    ) -> AccuracyCheck:
        """Compare ``out`` and the textbook ``base`` (both in the inputs' dtype) with the float64 ``ref``."""
        error = float((out.to(device=ref.device, dtype=torch.float64) - ref).abs().max())
        baseline_error = float((base.double() - ref).abs().max())
        return cls(error, baseline_error, floor, factor, str(base.dtype).removeprefix("torch."))

    def describe(self) -> str:
        verdict = "pass" if self.passes else "FAIL"
        return (
            f"{self.error:.2e} vs float64, {self.ratio:.2f}× textbook attention in {self.dtype} "
            f"({self.baseline_error:.2e}): {verdict}"
        )


def flash_rule(
    out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None = None, is_causal: bool = False,
    *, scale: float | None = None, rows: torch.Tensor | None = None, factor: float = FLASH_FACTOR,
) -> AccuracyCheck:  # fmt: skip
    """Judge ``out (N, ..., L, Ev)``, some attention on ``q, k, v``, by FlashAttention's rule, on the inputs' device.

    ``rows`` (1-D indices into L) checks only those queries, against every key, so the float64 scores need
    not fit in memory at large n; ``is_causal`` keeps its meaning (query i sees keys 0..i) for them.
    """
    factor = check_float("factor", factor, low=1.0)
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
    return AccuracyCheck.judge(out, base, ref, ulp_floor(q.dtype, ref), factor)


def ulp_floor(dtype: torch.dtype, *refs: torch.Tensor) -> float:
    """One unit in the last place of ``dtype`` at the scale of the float64 ``refs``: eps · max |ref|."""
    return torch.finfo(dtype).eps * max(max(float(ref.abs().max()) for ref in refs), 1e-30)
