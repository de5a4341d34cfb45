"""The efficient-attention routes (:mod:`attention_core.efficient`) as entries of the benchmark's registry.

A route's name with its knob's value (:class:`RouteParams`) names an entry: ``"performer(64)"`` is FAVOR+ with 64
features, ``"performer"`` the default of 256. None is exact (``Impl.exact`` is False): the row's note says its
relative error against float64 (:func:`.checks.approximation_note`). Masks, random features and projections are made
in ``prepare``, outside the timing, as a model holds them; FlexAttention's block mask and compile by the warm-up call.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F

from ..efficient.flex import flex_available, flex_plan
from ..efficient.linear import linear_attention
from ..efficient.lowrank import linformer_attention, linformer_projections
from ..efficient.patterns import and_masks, causal, dense_mask, sliding_window
from ..efficient.performer import orthogonal_features, performer_attention
from ..validation import check_choice, check_int, check_ints
from .config import Impl, Inputs, shared_kv
from .memory_models import route_extra_bytes

KNOB = {"sdpa-masked": "window", "flex-window": "window", "performer": "features", "linformer": "rank"}


@dataclass(frozen=True)
class RouteParams:
    """The knobs of the routes: ``window`` (flex-window, sdpa-masked: keys each side), ``features``
    (performer), ``rank`` (linformer; n when n is smaller), ``seed`` (performer, linformer)."""

    window: int = 256
    features: int = 256
    rank: int = 256
    seed: int = 0

    def __post_init__(self) -> None:
        check_ints(window=self.window, rank=self.rank, low=1, high=1 << 20)
        check_int("features", self.features, low=1, high=1 << 16)
        check_int("seed", self.seed, low=0, high=2**63 - 1)

    def label(self, route: str) -> str:
        """The route's entry name with its knob, e.g. ``"flex-window(256)"`` (``"linear"`` has none)."""
        knob = KNOB.get(route)
        return route if knob is None else f"{route}({getattr(self, knob)})"


DEFAULTS = RouteParams()  # window, features and rank 256, seed 0


def parse_route(name: str) -> tuple[str, RouteParams] | None:
    """``"performer(64)"`` → ``("performer", RouteParams(features=64))``; ``None`` for a name that is no route."""
    match = re.fullmatch(r"([a-z-]+)(?:\((\d+)\))?", name) if isinstance(name, str) else None
    if match is None or match[1] not in ROUTES or (match[2] is not None and match[1] not in KNOB):
        return None
    return match[1], DEFAULTS if match[2] is None else replace(DEFAULTS, **{KNOB[match[1]]: int(match[2])})


def _pattern(window: int, is_causal: bool) -> Any:
    return and_masks(sliding_window(window), causal()) if is_causal else sliding_window(window)


def _with(extra: Any) -> Any:
    """``prepare``: the inputs, and what ``extra(q)`` makes once, outside the timing."""
    return lambda q, k, v: (q, k, v, extra(q))


def _route(route: str, params: RouteParams, description: str, run: Any, backend: Any, **kw: Any) -> Impl:
    """An entry named by its knob (:meth:`RouteParams.label`), with its memory model; never exact."""
    return Impl(params.label(route), description, run,
                lambda c: route_extra_bytes(route, c, features=params.features, rank=min(params.rank, c.n)),
                backend, exact=False, **kw)  # fmt: skip


def _masked(params: RouteParams) -> Impl:
    def run(inputs: Inputs, is_causal: bool) -> torch.Tensor:
        q, k, v = shared_kv(inputs[:3])
        masks = inputs[3]
        if is_causal not in masks:  # made by the warm-up call, as FlexAttention's block mask is
            masks[is_causal] = dense_mask(_pattern(params.window, is_causal), q.shape[-2], k.shape[-2], device=q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=masks[is_causal])  # mask (n, n) bool

    return _route(
        "sdpa-masked", params,
        f"Not exact: a sliding window of {params.window} keys each side as a dense n×n bool mask to torch SDPA: "
        "what people write before FlexAttention, still all n² work.",
        run,
        lambda inputs, is_causal: f"torch SDPA, dense bool mask, window {params.window}",
        prepare=_with(lambda q: {}),
    )


def _flex(params: RouteParams) -> Impl:
    def run(inputs: Inputs, is_causal: bool) -> torch.Tensor:
        q, k, v = shared_kv(inputs[:3])
        plans = inputs[3]
        if is_causal not in plans:  # the warm-up call: the block mask, and the compile the first time
            plans[is_causal] = flex_plan(q, k, v, _pattern(params.window, is_causal))
        return plans[is_causal].run(q, k, v)

    def label(inputs: Inputs, is_causal: bool) -> str:
        plan = inputs[3].get(is_causal)
        if plan is None:
            return f"FlexAttention, window {params.window}, compiled, block-sparse"
        paid = "compiled in this run" if plan.compiled_now else "compiled earlier"
        return (f"FlexAttention, window {params.window}, block-sparse, {plan.sparsity:.0%} of the tiles skipped; "
                f"{paid} ({plan.compile_s:.1f} s), block mask {plan.mask.build_s * 1e3:.0f} ms")  # fmt: skip

    return _route(
        "flex-window", params,
        f"Not exact: a sliding window of {params.window} keys each side (Longformer's local attention) under "
        "compiled FlexAttention, which skips the empty 128×128 tiles. The first call compiles (seconds).",
        run,
        label,
        prepare=_with(lambda q: {}),
        not_here=lambda device, dtype: flex_available(device),
        no_backward="the page and the benchmark compile FlexAttention's forward only",
    )


def _performer(params: RouteParams) -> Impl:
    def features(q: torch.Tensor) -> torch.Tensor:
        return orthogonal_features(params.features, q.shape[-1], seed=params.seed, device=q.device, dtype=q.dtype)

    return _route(
        "performer", params,
        f"Not exact: the Performer's FAVOR+ with {params.features} orthogonal positive random features "
        f"(seed {params.seed}), O(n); an estimate of softmax attention.",
        lambda inputs, is_causal: performer_attention(*shared_kv(inputs[:3]), w=inputs[3], is_causal=is_causal),
        lambda inputs, is_causal: f"FAVOR+, {params.features} orthogonal random features",
        prepare=_with(features),
    )


def _linformer(params: RouteParams) -> Impl:
    def projections(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = q.shape[-2]
        return linformer_projections(min(params.rank, n), n, seed=params.seed, device=q.device, dtype=q.dtype)

    def run(inputs: Inputs, is_causal: bool) -> torch.Tensor:
        if is_causal:  # a RuntimeError on the first call of a forced entry is recorded as n/a, with this reason
            raise RuntimeError("Linformer has no causal form: its projection along the sequence mixes future tokens in")
        return linformer_attention(*shared_kv(inputs[:3]), projection=inputs[3])

    return _route(
        "linformer", params,
        f"Not exact: Linformer, keys and values projected to {params.rank} rows (n when smaller) by random "
        f"Gaussian matrices (seed {params.seed}), O(n); untrained. No causal form.",
        run,
        lambda inputs, is_causal: f"Linformer, rank {inputs[3][0].shape[0]}, random Gaussian projections",
        prepare=_with(projections),
        forced=True,
    )


def _linear(params: RouteParams) -> Impl:  # no knob
    return _route(
        "linear", params,
        "Not exact: linear attention (Katharopoulos et al.) with elu + 1 features, O(n); a different function.",
        lambda inputs, is_causal: linear_attention(*shared_kv(inputs), is_causal=is_causal),
        lambda inputs, is_causal: "linear attention, elu + 1 features",
    )


_BUILDERS = {"sdpa-masked": _masked, "flex-window": _flex, "linear": _linear, "performer": _performer,
             "linformer": _linformer}  # fmt: skip
ROUTES = tuple(_BUILDERS)


@functools.cache
def route_impl(route: str, params: RouteParams = DEFAULTS) -> Impl:
    """The registry entry of ``route`` at ``params``, named by :meth:`RouteParams.label`."""
    return _BUILDERS[check_choice("route", route, ROUTES)](params)


ROUTE_IMPLEMENTATIONS: dict[str, Impl] = {route: replace(route_impl(route), name=route) for route in ROUTES}
