"""Each implementation against float64 at a small n: its output, and its gradients dQ, dK and dV.

The largest absolute error against a float64 reference, judged (by ``benchmarks/report.py``) by FlashAttention's rule
beside textbook attention's in the same dtype (:mod:`attention_core.accuracy`). It runs at ``n = 128`` whatever
the sweep's n: the float64 reference builds the n×n weights.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import torch

from ..accuracy import GradientCheck, attention_grads, gradient_rule
from ..efficient.accuracy import relative_error
from ..heads import repeat_kv
from ..textbook import reference_attention, textbook_attention
from .config import BenchConfig
from .impls import get_impl, make_inputs
from .passes import grad_out

CHECK_N = 128  # the n at which every implementation is compared with the float64 reference
APPROX_CHECK_N = 1024  # an approximation's error is said at this n (a window of 256 drops keys only past it)


def _check_outputs(config: BenchConfig, n: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The implementation's output at ``n`` on seeded inputs, and the float64 reference (both float64);
    ``None`` when it cannot run there."""
    impl = get_impl(config.impl)
    if impl.not_here(torch.device(config.device), config.torch_dtype):
        return None
    q, k, v = make_inputs(config, n=n, seed=1)
    try:
        with warnings.catch_warnings(action="ignore"):
            out = torch.as_tensor(impl.run(impl.prepare(q, k, v), config.causal))
    except RuntimeError:
        return None
    h = config.heads  # GQA: the reference sees every K/V head repeated for its query heads
    ref = reference_attention(q, repeat_kv(k, h), repeat_kv(v, h), is_causal=config.causal)  # (B, H, n, d)
    return out.to(device=ref.device, dtype=torch.float64), ref


def correctness_error(config: BenchConfig, n: int = CHECK_N) -> float | None:
    """Max |output − float64 reference| of the config's implementation at a small ``n``; ``None`` where it cannot
    run, and for a route that is not exact attention (:func:`approximation_note` says its difference)."""
    if not get_impl(config.impl).exact:
        return None
    pair = _check_outputs(config, min(n, config.n))
    return None if pair is None else float((pair[0] - pair[1]).abs().max())


def approximation_note(config: BenchConfig, n: int = APPROX_CHECK_N) -> str:
    """For a route that approximates softmax attention, its relative error ‖O − O_ref‖ / ‖O_ref‖ against
    the float64 reference at ``n`` (batch 1), as the row's note; "" for exact attention or where it cannot run."""
    if get_impl(config.impl).exact or (pair := _check_outputs(replace(config, n=n, batch=1), n)) is None:
        return ""
    return f"approximation: relative error {relative_error(*pair):.1%} vs the float64 reference at n = {n}"


def gradient_check(config: BenchConfig, n: int = CHECK_N) -> GradientCheck | None:
    """dQ, dK, dV of the config's implementation at a small ``n``, against float64 autograd, by FlashAttention's rule;
    ``None`` where it has no backward or cannot run, and for a route that is not exact attention. With GQA the textbook
    baseline repeats K and V, so its dK and dV are sums over each group, as the implementation's own."""
    impl = get_impl(config.impl)
    if not impl.exact or impl.cannot_run(replace(config, mode="fwd+bwd")):
        return None
    side = min(n, config.n)
    q, k, v = make_inputs(config, n=side, seed=1)
    d_out = grad_out(config, n=side, seed=3)
    h = config.heads  # the textbook baseline repeats each K/V head for its query heads (no copy without GQA)
    try:
        with warnings.catch_warnings(action="ignore"):
            grads = attention_grads(lambda q, k, v, **kw: impl.run((q, k, v), kw["is_causal"]), q, k, v, d_out,
                                    is_causal=config.causal)  # fmt: skip
    except RuntimeError:  # a forced kernel with no backward for these inputs: the row says so
        return None
    return gradient_rule(grads, q, k, v, d_out, is_causal=config.causal,
                         textbook=lambda q, k, v, attn_mask, is_causal, scale: textbook_attention(
                             q, repeat_kv(k, h), repeat_kv(v, h), attn_mask, is_causal, scale=scale))  # fmt: skip
