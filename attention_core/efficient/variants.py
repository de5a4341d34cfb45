"""Every efficient route as one call with plain arguments, with its weights, for comparing.

``variant_attention(q, k, v, "window", window=8)`` runs a route and returns its output and the
``(N, ..., L, S)`` weights it puts on the keys (explicit for the sparse patterns, implied for the
kernel and low-rank routes), so a page can draw them beside exact attention and
:func:`compare_variant` can measure the difference. Every route is linear in ``v``, so its weights are
its output for the values ``I (S, S)``: the same code, run once more. They are materialised, so this module
is for small n (a sentence, a few hundred tokens); the benchmark (:mod:`attention_core.bench.routes`) times
the routes at large n. :func:`error_curve` measures a route's error against its size.

The variants (parameters in brackets):

- ``"window"`` (window), ``"window+globals"`` (window, n_global), ``"dilated"`` (window,
  dilation), ``"bigbird"`` (window and n_global in blocks, n_random, block, seed): a sparse
  pattern, exact softmax over the keys it allows;
- ``"linear"``: elu + 1 features; ``"performer"`` (features, seed, lengths): FAVOR+;
- ``"linformer"`` (rank, seed, kind): keys and values projected to ``rank`` rows.

``is_causal`` makes every variant causal (a pattern is intersected with :func:`.patterns.causal`);
Linformer has no causal form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..attention import AttentionTrace, attention_trace, check_attention_args
from ..textbook import reference_attention
from ..validation import any_true, check_bool, check_choice, check_int, check_int_list
from .accuracy import Accuracy, ErrorCurve, compare, random_qkv, relative_error
from .linear import linear_attention
from .lowrank import linformer_attention
from .masked import masked_attention
from .patterns import MaskMod, and_masks, bigbird, causal, dilated_window, sliding_window, window_with_globals
from .performer import performer_attention

PATTERNS = ("window", "window+globals", "dilated", "bigbird")
VARIANTS = (*PATTERNS, "linear", "performer", "linformer")
SIZE = {"performer": "features", "linformer": "rank"}  # the parameter an error curve grows
ROUTE_SEED_OFFSET = 1000  # an error curve draws its inputs from seed s, the route's randomness from s + this


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


def _route(
    q: torch.Tensor, k: torch.Tensor, variant: str, *,
    window: int = 32, n_global: int = 1, dilation: int = 2, n_random: int = 1, block: int = 16,  # the patterns
    seed: int = 0, features: int = 64, lengths: str = "fixed", rank: int = 32, kind: str = "gaussian",  # random
    is_causal: bool = False, scale: float | None = None,
) -> Callable[[torch.Tensor], torch.Tensor]:  # fmt: skip
    """The route as a function of the values, for checked ``q``, ``k`` and ``variant``."""
    check_bool("is_causal", is_causal)
    if variant in PATTERNS:
        mod = variant_pattern(
            variant, n=max(q.shape[-2], k.shape[-2]), window=window, n_global=n_global, dilation=dilation,
            n_random=n_random, block=block, seed=seed, is_causal=is_causal, device=q.device,
        )  # fmt: skip
        return lambda v: masked_attention(q, k, v, mod, scale=scale).output
    if variant == "linear":
        return lambda v: linear_attention(q, k, v, is_causal=is_causal)
    if variant == "performer":
        return lambda v: performer_attention(q, k, v, features=features, seed=seed, lengths=lengths,
                                             is_causal=is_causal, scale=scale)  # fmt: skip
    if is_causal:
        raise ValueError("Linformer has no causal form: projecting along the sequence mixes future tokens in")
    return lambda v: linformer_attention(q, k, v, rank=rank, seed=seed, kind=kind, scale=scale)


def variant_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, variant: str, **params: object
) -> VariantOutput:
    """Run one variant on ``q (N, ..., L, E)``, ``k (N, ..., S, E)``, ``v (N, ..., S, Ev)`` and materialise
    its weights ``(N, ..., L, S)``, the route on the values ``I (S, S)``. ``params``: the chosen variant's
    (module docstring), ``is_causal`` and ``scale``; each route checks its own."""
    variant = check_choice("variant", variant, VARIANTS)
    scale: Any = params.get("scale")
    check_attention_args(q, k, v, None, 0.0, False, scale, positive_scale=True, min_length=1)
    run = _route(q, k, variant, **params)  # type: ignore[arg-type]
    output, weights = run(v), run(torch.eye(k.shape[-2], dtype=v.dtype, device=v.device))  # (N, ..., L, S)
    if any_true(weights < 0):  # only a Gaussian Linformer
        return VariantOutput(output, None, "a random Gaussian projection mixes the values with signed coefficients, "
                             "not weights")  # fmt: skip
    return VariantOutput(output, weights)


def compare_variant(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, variant: str, **params: object
) -> tuple[VariantOutput, AttentionTrace, Accuracy]:
    """Run ``variant`` (parameters as :func:`variant_attention`) and measure it against the reference, the
    core's trace in float64: the variant, that trace, and the relative error of the output with the
    per-row KL of the weights."""
    result = variant_attention(q, k, v, variant, **params)
    causal, scale = bool(params.get("is_causal", False)), params.get("scale")
    reference = attention_trace(q.double(), k.double(), v.double(), is_causal=causal, scale=scale)  # type: ignore[arg-type]
    return result, reference, compare(result.output, reference.output, result.weights, reference.weights,
                                      note=result.note)  # fmt: skip


def error_curve(
    variant: str, sizes: Sequence[int], *, n: int = 256, d: int = 64, heads: int = 8,
    seeds: Sequence[int] = (0, 1, 2, 3, 4), std: float | None = None, is_causal: bool = False,
    device: str | torch.device | None = None, **params: object,
) -> ErrorCurve:  # fmt: skip
    """The Performer's or Linformer's relative output error against the float64 reference at each of ``sizes``
    (features m, or rank k ≤ n), per seed: random float32 inputs ``(1, heads, n, d)`` from seed ``s``
    (:func:`.accuracy.random_qkv`, ``std`` on q and k), the route's randomness from ``s + ROUTE_SEED_OFFSET``
    (one seed for both would reuse the same Gaussian numbers); ``params`` as :func:`variant_attention`.

    ``std=None`` picks ``d^(−1/4)``, where each scaled ``|q|²`` is about 1 and the Performer's error falls as
    1/√m; ``std=1`` gives peaked attention, where the estimate's variance swamps that law at any affordable m.
    """
    size = SIZE[check_choice("variant", variant, tuple(SIZE))]
    xs = tuple(check_int_list(size, sizes, low=1))  # each route checks its upper bound
    seeds = tuple(check_int_list("seeds", seeds, low=0))
    d = check_int("d", d, low=1, high=1 << 14)
    std = d**-0.25 if std is None else std  # checked by random_qkv
    errors: list[list[float]] = [[] for _ in xs]
    for seed in seeds:
        q, k, v = random_qkv(n, d, heads=heads, seed=seed, std=std, device=device)  # (1, H, n, d) each
        reference = reference_attention(q, k, v, is_causal=is_causal)  # (1, H, n, d) float64
        for i, x in enumerate(xs):
            drawn: dict[str, Any] = {size: x, "seed": seed + ROUTE_SEED_OFFSET}
            run = _route(q, k, variant, is_causal=is_causal, **drawn, **params)  # type: ignore[arg-type]
            errors[i].append(relative_error(run(v), reference))
    return ErrorCurve(x=xs, errors=tuple(tuple(e) for e in errors))
