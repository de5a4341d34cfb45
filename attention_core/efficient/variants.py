"""Every efficient route as one call with plain arguments, with its weights, for comparing.

``variant_attention(q, k, v, "window", window=8)`` runs a route and returns its output and the
``(N, ..., L, S)`` weights it puts on the keys (explicit for the sparse patterns, implied for the
kernel and low-rank routes), so a page can draw them beside exact attention and
:func:`compare_variant` can measure the difference. The weights are materialised: this module is
for small n (a sentence, a few hundred tokens); the benchmark (:mod:`attention_core.bench.routes`) times
the routes at large n.

The variants (parameters in brackets):

- ``"window"`` (window), ``"window+globals"`` (window, n_global), ``"dilated"`` (window,
  dilation), ``"bigbird"`` (window and n_global in blocks, n_random, block, seed): a sparse
  pattern, exact softmax over the keys it allows;
- ``"linear"``: elu + 1 features; ``"performer"`` (features, seed): FAVOR+;
- ``"linformer"`` (rank, seed, kind): keys and values projected to ``rank`` rows.

``is_causal`` makes every variant causal (a pattern is intersected with :func:`.patterns.causal`);
Linformer has no causal form.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..attention import AttentionTrace, attention_trace, check_attention_args
from ..validation import any_true, check_choice
from .accuracy import Accuracy, compare
from .linear import linear_attention, linear_weights
from .lowrank import linformer_attention, linformer_weights
from .masked import masked_attention, masked_weights
from .patterns import MaskMod, and_masks, bigbird, causal, dilated_window, sliding_window, window_with_globals
from .performer import performer_attention, performer_weights

PATTERNS = ("window", "window+globals", "dilated", "bigbird")
VARIANTS = (*PATTERNS, "linear", "performer", "linformer")


@dataclass(frozen=True)
class VariantOutput:
    """A route's output ``(N, ..., L, Ev)`` and weights ``(N, ..., L, S)`` (``None`` where it has none
    that form a distribution; ``note`` says why)."""

    output: torch.Tensor
    weights: torch.Tensor | None
    note: str | None = None


def variant_pattern(
    variant: str, *, n: int, window: int = 32, n_global: int = 1, dilation: int = 2, n_random: int = 1,
    block: int = 16, seed: int = 0, is_causal: bool = False, device: str | torch.device | None = None,
) -> MaskMod:  # fmt: skip
    """The mask function of a pattern variant for sequences of ``n`` tokens."""
    variant = check_choice("variant", variant, PATTERNS)
    if variant == "window":
        mod = sliding_window(window)
    elif variant == "window+globals":
        mod = window_with_globals(window, n_global)
    elif variant == "dilated":
        mod = dilated_window(window, dilation)
    else:
        mod = bigbird(window, n_global, n_random, block, seed, n=n, device=device)
    return and_masks(mod, causal()) if is_causal else mod


def variant_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, variant: str, *,
    window: int = 32, n_global: int = 1, dilation: int = 2, n_random: int = 1, block: int = 16,  # the patterns
    seed: int = 0, features: int = 64, rank: int = 32, kind: str = "gaussian",  # the random routes
    is_causal: bool = False, scale: float | None = None,
) -> VariantOutput:  # fmt: skip
    """Run one variant on ``q (N, ..., L, E)``, ``k (N, ..., S, E)``, ``v (N, ..., S, Ev)`` and materialise
    its weights. Only the parameters of the chosen variant are used (see the module docstring)."""
    variant = check_choice("variant", variant, VARIANTS)
    if not isinstance(is_causal, bool):
        raise ValueError(f"is_causal must be True or False, got {is_causal!r}")
    check_attention_args(q, k, v, None, 0.0, False, scale, positive_scale=True, min_length=1)
    if variant in PATTERNS:
        n = max(q.shape[-2], k.shape[-2])
        mod = variant_pattern(
            variant, n=n, window=window, n_global=n_global, dilation=dilation, n_random=n_random, block=block,
            seed=seed, is_causal=is_causal, device=q.device,
        )  # fmt: skip
        return VariantOutput(masked_attention(q, k, v, mod, scale=scale).output, masked_weights(q, k, mod, scale=scale))
    if variant == "linear":
        return VariantOutput(linear_attention(q, k, v, is_causal=is_causal), linear_weights(q, k, is_causal=is_causal))
    if variant == "performer":
        out = performer_attention(q, k, v, features=features, seed=seed, is_causal=is_causal, scale=scale)
        weights = performer_weights(q, k, features=features, seed=seed, is_causal=is_causal, scale=scale)
        return VariantOutput(out, weights)
    if is_causal:
        raise ValueError("Linformer has no causal form: projecting along the sequence mixes future tokens in")
    out = linformer_attention(q, k, v, rank=rank, seed=seed, kind=kind, scale=scale)
    implied = linformer_weights(q, k, rank=rank, seed=seed, kind=kind, scale=scale)
    if any_true(implied < 0):
        note = "a random Gaussian projection mixes the values with signed coefficients, not weights"
        return VariantOutput(out, None, note)
    return VariantOutput(out, implied)


def compare_variant(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, variant: str, **params: object
) -> tuple[VariantOutput, AttentionTrace, Accuracy]:
    """Run ``variant`` (parameters as :func:`variant_attention`) and measure it against the reference, the
    core's trace in float64: the variant, that trace, and the relative error of the output with the
    per-row KL of the weights."""
    result = variant_attention(q, k, v, variant, **params)  # type: ignore[arg-type]
    causal, scale = bool(params.get("is_causal", False)), params.get("scale")
    reference = attention_trace(q.double(), k.double(), v.double(), is_causal=causal, scale=scale)  # type: ignore[arg-type]
    return result, reference, compare(result.output, reference.output, result.weights, reference.weights,
                                      note=result.note)  # fmt: skip
