"""The efficient-attention routes (:mod:`attention_core.efficient`) as benchmark entries.

Each is named by its route and runs at the parameters documented in
:class:`attention_core.efficient.cost.RouteParams` (said in its description and backend label):

- ``flex-window``: a sliding window of 256 keys each side under compiled FlexAttention, which skips
  the empty 128 × 128 tiles (n/a where ``torch.compile`` cannot run: no C++ compiler, say);
- ``linear``: linear attention with elu + 1 features, O(n);
- ``performer``: FAVOR+ with 256 orthogonal positive random features (seed 0), O(n);
- ``linformer``: keys and values projected to 256 rows by random Gaussian matrices (seed 0); no
  causal form, so a causal configuration is n/a.

None of them is exact softmax attention (``Impl.exact`` is False): FlashAttention's rule does not
apply, and the benchmark reports each one's relative error against the float64 reference in the
row's note (:func:`attention_core.bench.run.approximation_note`) instead of a max error. The random
features and projections are drawn in ``prepare``, outside the timing, as a model holds them
between calls; FlexAttention's block mask and compile are made by the warm-up call.
"""

from __future__ import annotations

from typing import Any

import torch

from ..efficient.cost import RouteParams
from ..efficient.flex import flex_available, flex_plan
from ..efficient.linear import linear_attention
from ..efficient.lowrank import linformer_attention, linformer_projections
from ..efficient.memory import route_extra_bytes
from ..efficient.patterns import and_masks, causal, sliding_window
from ..efficient.performer import favor_attention, orthogonal_features
from .impls import BenchConfig, Impl, Inputs, _shared_kv
from .memory_models import _repeated_kv

DEFAULTS = RouteParams()  # window, features and rank 256, seed 0


def _memory(route: str) -> Any:
    def extra_bytes(c: BenchConfig) -> int:
        shape = {"heads": c.heads, "d": c.d, "batch": c.batch, "dtype": c.dtype, "is_causal": c.causal}
        sizes = {"features": DEFAULTS.features, "rank": min(DEFAULTS.rank, c.n)}
        return route_extra_bytes(route, c.n, **shape, **sizes) + _repeated_kv(c)

    return extra_bytes


def _flex_run(inputs: Inputs, is_causal: bool) -> torch.Tensor:
    q, k, v = _shared_kv(inputs[:3])
    plans = inputs[3]
    if is_causal not in plans:  # the warm-up call: the block mask, and the compile the first time
        window = sliding_window(DEFAULTS.window)
        plans[is_causal] = flex_plan(q, k, v, and_masks(window, causal()) if is_causal else window)
    return plans[is_causal].run(q, k, v)


def _flex_label(inputs: Inputs, is_causal: bool) -> str:
    plan = inputs[3].get(is_causal)
    skipped = f", {plan.sparsity:.0%} of the tiles skipped" if plan is not None else ""
    return f"FlexAttention, window {DEFAULTS.window}, compiled, block-sparse{skipped}"


def _linformer_run(inputs: Inputs, is_causal: bool) -> torch.Tensor:
    if is_causal:  # a RuntimeError on the first call of a forced entry is recorded as n/a, with this reason
        raise RuntimeError("Linformer has no causal form: its projection along the sequence mixes future tokens in")
    return linformer_attention(*_shared_kv(inputs[:3]), projection=inputs[3])


def _features(q: torch.Tensor) -> torch.Tensor:
    return orthogonal_features(DEFAULTS.features, q.shape[-1], seed=DEFAULTS.seed, device=q.device, dtype=q.dtype)


def _projections(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n = q.shape[-2]
    return linformer_projections(min(DEFAULTS.rank, n), n, seed=DEFAULTS.seed, device=q.device, dtype=q.dtype)


def _with(extra: Any) -> Any:
    """``prepare``: the inputs and what ``extra(q)`` draws once, outside the timing. K and V are repeated to
    every query head (GQA) inside the timed call, as for the other entries that cannot share them."""
    return lambda q, k, v: (q, k, v, extra(q))


ROUTE_IMPLEMENTATIONS: dict[str, Impl] = {
    "flex-window": Impl(
        "flex-window",
        f"Not exact: a sliding window of {DEFAULTS.window} keys each side (Longformer's local attention) under "
        "compiled FlexAttention, which skips the empty 128×128 tiles. The first call compiles (seconds).",
        _flex_run,
        _memory("flex-window"),
        _flex_label,
        prepare=_with(lambda q: {}),
        not_here=lambda device, dtype: flex_available(device),
        exact=False,
        no_backward="the page and the benchmark compile FlexAttention's forward only",
    ),
    "linear": Impl(
        "linear",
        "Not exact: linear attention (Katharopoulos et al.) with elu + 1 features, O(n); a different function.",
        lambda inputs, is_causal: linear_attention(*_shared_kv(inputs), is_causal=is_causal),
        _memory("linear"),
        lambda inputs, is_causal: "linear attention, elu + 1 features",
        exact=False,
    ),
    "performer": Impl(
        "performer",
        f"Not exact: the Performer's FAVOR+ with {DEFAULTS.features} orthogonal positive random features "
        f"(seed {DEFAULTS.seed}), O(n); an estimate of softmax attention.",
        lambda inputs, is_causal: favor_attention(*_shared_kv(inputs[:3]), inputs[3], is_causal=is_causal),
        _memory("performer"),
        lambda inputs, is_causal: f"FAVOR+, {DEFAULTS.features} orthogonal random features",
        prepare=_with(_features),
        exact=False,
    ),
    "linformer": Impl(
        "linformer",
        f"Not exact: Linformer, keys and values projected to {DEFAULTS.rank} rows (n when smaller) by random "
        f"Gaussian matrices (seed {DEFAULTS.seed}), O(n); untrained. No causal form.",
        _linformer_run,
        _memory("linformer"),
        lambda inputs, is_causal: f"Linformer, rank {inputs[3][0].shape[0]}, random Gaussian projections",
        prepare=_with(_projections),
        forced=True,
        exact=False,
    ),
}
