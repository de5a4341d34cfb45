"""What the walkthrough page shows, computed in one place: a preset's inputs, the mask, the five-step trace and its
live checks (:func:`run_walkthrough`), and its backward pass for an upstream gradient (:func:`walkthrough_backward`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F

from .attention import AttentionTrace, attention_trace, dot_product_attention
from .backward import BackwardTrace, attention_backward
from .masks import causal_mask, padding_mask
from .presets import (
    MODEL_HEAD,
    MODEL_LAYER,
    MODEL_TEXT,
    PRESETS,
    WalkthroughInputs,
    decoder_example,
    model_example,
    random_example,
    sentence_example,
    tiny_example,
)
from .validation import check_choice, check_float, check_int

MASK_KINDS = ("none", "causal", "padding", "cross")
UPSTREAM = ("row", "ones", "random")  # the upstream gradient dO: see walkthrough_backward


@dataclass(frozen=True)
class WalkthroughResult:
    """Inputs, the mask that was applied (bool ``(L, S)`` or ``None``), the trace and the checks."""

    inputs: WalkthroughInputs
    mask_kind: str
    mask: torch.Tensor | None
    trace: AttentionTrace
    valid_keys: int
    delta_core: float  # max |Δ| between the traced output and one call of the core
    delta_torch: float  # max |Δ| between the traced (dropout-free) output and torch's SDPA
    seed: int = 0  # the dropout pattern's seed

    @property
    def row_sum_error(self) -> float | None:
        """max |Σ_j weights_ij − 1| over rows that may attend somewhere; ``None`` if none may."""
        live = ~self.trace.fully_masked_rows
        if not bool(live.any()):
            return None
        return float((self.trace.weights.sum(dim=-1)[live] - 1.0).abs().max())  # a fully masked row sums to 0

    @property
    def fully_masked(self) -> list[int]:
        """Indices of query rows whose every key is masked."""
        return self.trace.fully_masked_rows.nonzero().flatten().tolist()


def build_mask(kind: str, n_q: int, n_k: int, pad: int, device: torch.device) -> tuple[torch.Tensor | None, int]:
    """The boolean mask (``True`` = may attend) of one kind of attention, and the valid key count; ``pad`` is how many
    keys at the end are padding (``padding`` and ``cross`` only)."""
    check_choice("mask", kind, MASK_KINDS)
    pad = check_int("pad", pad, low=0, high=n_k)
    if kind == "none":
        return None, n_k
    if kind == "causal":
        return causal_mask(n_q, n_k, device=device), n_k
    valid = n_k - pad
    keys_ok = padding_mask([valid], n_k, device=device)[0]  # (1, S): broadcasts over the queries
    return keys_ok.expand(n_q, n_k), valid  # (L, S)


def run_walkthrough(
    preset: str,
    *,
    n: int = 6, d_model: int = 8, d_k: int = 4, d_v: int = 4, seed: int = 0, positions: bool = True,
    mask: str = "none", pad: int = 0, scaled: bool = True, dropout_p: float = 0.0,
    text: str = MODEL_TEXT, layer: int = MODEL_LAYER, head: int = MODEL_HEAD, model: object | None = None,
    device: str | torch.device | None = None,
) -> WalkthroughResult:  # fmt: skip
    """Everything the walkthrough needs, from plain values: the inputs of ``preset`` (one of
    :data:`~.presets.PRESETS`), the mask, the trace and the checks.

    ``tiny`` ignores the sizes and the seed; ``sentence`` ignores ``n`` (and takes d_model ≥ 4, which its
    shared features need); ``model`` and ``decoder`` read only ``text``, ``layer`` and ``head`` (and reuse
    ``model``, a loaded encoder or decoder, when given). ``mask="cross"`` switches to the preset's
    cross-attention inputs (n_q ≠ n_k) with the last ``pad`` source keys padded. With ``scaled=False``
    the scale is 1, to show the raw scores. Dropout (when ``dropout_p > 0``) is seeded by ``seed``.
    """
    dropout_p = check_float("dropout_p", dropout_p, low=0.0, high=1.0, high_open=True)
    check_choice("preset", preset, PRESETS)
    cross = mask == "cross"
    if preset in ("model", "decoder"):
        example = model_example if preset == "model" else decoder_example
        inputs = example(text=text, layer=layer, head=head, cross=cross, model=model, device=device)
    elif preset == "tiny":
        inputs = tiny_example(positions=positions, cross=cross, device=device)
    else:
        sized = {"d_k": d_k, "d_v": d_v, "seed": seed, "positions": positions, "cross": cross, "device": device}
        if preset == "sentence":
            inputs = sentence_example(d_model=max(d_model, 4), **sized)
        else:
            inputs = random_example(n=n, d_model=d_model, **sized)
    q, k, v = inputs.q, inputs.k, inputs.v
    attn_mask, valid = build_mask(mask, inputs.n_q, inputs.n_k, min(pad, inputs.n_k), q.device)
    scale = None if scaled else 1.0
    gen = torch.Generator(device=q.device).manual_seed(seed)
    trace = attention_trace(q, k, v, attn_mask, dropout_p, scale=scale, generator=gen)

    gen = torch.Generator(device=q.device).manual_seed(seed)
    one_call = dot_product_attention(q, k, v, attn_mask, dropout_p, scale=scale, generator=gen)
    delta_core = float((trace.output - one_call).abs().max())
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask, 0.0, scale=trace.scale)  # (L, Ev)
    plain = trace.weights @ v  # (L, S) @ (S, Ev) -> (L, Ev): the output without dropout
    rows_ok = ~trace.fully_masked_rows  # torch's math path may give NaN on fully masked rows
    delta_torch = float((plain - fused)[rows_ok].abs().max()) if bool(rows_ok.any()) else 0.0
    return WalkthroughResult(
        inputs=inputs, mask_kind=mask, mask=attn_mask, trace=trace, valid_keys=valid, delta_core=delta_core,
        delta_torch=delta_torch, seed=seed,
    )  # fmt: skip


def walkthrough_backward(result: WalkthroughResult, upstream: str, *, row: int = 0) -> tuple[BackwardTrace, float]:
    """The backward pass of the walkthrough's trace in steps, and its largest difference from autograd.

    The upstream gradient dO ``(L, Ev)`` is 1 on output ``row`` only (``"row"``), 1 everywhere (``"ones"``, the
    gradient of the outputs' sum) or seeded Gaussian numbers (``"random"``). Autograd differentiates the same five
    steps (same mask, scale and dropout pattern) on its own.
    """
    check_choice("upstream", upstream, UPSTREAM)
    inp, tr = result.inputs, result.trace
    row = check_int("row", row, low=0, high=tr.output.shape[-2] - 1)
    if upstream == "random":
        gen = torch.Generator().manual_seed(result.seed)
        grad_output = torch.randn(tr.output.shape, generator=gen, dtype=tr.output.dtype).to(tr.output.device)
    else:
        grad_output = torch.ones_like(tr.output) if upstream == "ones" else torch.zeros_like(tr.output)
        grad_output[..., row, :] = 1.0
    back = attention_backward(inp.q, inp.k, inp.v, tr, grad_output)
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (inp.q, inp.k, inp.v))
    gen = torch.Generator(device=q.device).manual_seed(result.seed)
    attention_trace(q, k, v, result.mask, tr.dropout_p, scale=tr.scale, generator=gen).output.backward(grad_output)
    pairs = ((back.grad_q, q.grad), (back.grad_k, k.grad), (back.grad_v, v.grad))
    return back, max(float((ours - ref).abs().max()) for ours, ref in pairs)
