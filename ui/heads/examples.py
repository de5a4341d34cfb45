"""The heads page's example, computed with the core (torch only, no streamlit, so tests call it directly): the
walkthrough's sentence through multi-head attention and its grouped-query conversion, and decoded from a KV cache."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from attention_core.heads import (
    check_head_counts,
    head_size,
    mean_pool_kv,
    merge_heads,
    multi_head_attention,
    multi_head_trace,
)
from attention_core.kv_cache import decode_with_cache
from attention_core.presets import sentence_example
from attention_core.validation import check_int


@dataclass(frozen=True)
class HeadSettings:
    """The controls above the heads page's tabs."""

    d_model: int
    n_heads: int
    seed: int
    causal: bool


QK_GAIN = 2.0  # W_q and W_k are drawn twice as wide as Xavier's std: sharper, visibly different heads


@dataclass(frozen=True)
class HeadsExample:
    """The sentence through h query heads and g K/V heads, and decoded from a KV cache.

    Shapes: ``q (L, d_model)``, Q before the split into heads; ``weights_mha``, ``weights_gqa (h, L, L)``.
    ``max_abs_diff`` and ``rel_diff`` (‖Δ‖ / ‖MHA's‖, Frobenius norms) compare the GQA output with the MHA one;
    ``delta_torch`` is the largest difference of the GQA output from torch's SDPA with ``enable_gqa=True``.
    ``decoded[t]`` is ``(h, t + 1)``, the new token's weights over the GQA cache at step t; ``decode_diff``
    compares the decoded rows with causal attention over the whole sentence.
    """

    tokens: tuple[str, ...]
    d_k: int
    q: torch.Tensor
    weights_mha: torch.Tensor
    weights_gqa: torch.Tensor
    max_abs_diff: float
    rel_diff: float
    delta_torch: float
    decoded: list[torch.Tensor]
    decode_diff: float


def example_weights(
    d_model: int, n_heads: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded random MHA projections ``(d_model, d_model)``: W_v and W_o with std 1/√d_model (Xavier's
    for a square matrix), W_q and W_k with :data:`QK_GAIN` times that, so each head's weights show a
    pattern; at 1/√d_model the scores are so small that every row is nearly uniform."""
    d_model = check_int("d_model", d_model, low=1, high=1024)
    head_size(d_model, check_head_counts(n_heads)[0])
    gen = torch.Generator().manual_seed(check_int("seed", seed, low=0, high=2**31 - 1) + 7919)
    std = 1.0 / math.sqrt(d_model)
    w_q, w_k, w_v, w_o = (torch.randn(d_model, d_model, generator=gen) * std for _ in range(4))
    return QK_GAIN * w_q, QK_GAIN * w_k, w_v, w_o


def heads_example(
    *, d_model: int = 32, n_heads: int = 4, n_kv_heads: int | None = None, seed: int = 0, causal: bool = False
) -> HeadsExample:
    """The sentence preset through MHA and through its GQA conversion with ``n_kv_heads`` K/V heads (``causal``
    or not), and decoded token by token from a KV cache of the GQA conversion."""
    h, g = check_head_counts(n_heads, n_kv_heads)
    w_q, w_k, w_v, w_o = example_weights(d_model, h, seed)  # validates d_model and seed; the sentence: ≤ 64
    inputs = sentence_example(d_model=d_model, d_k=4, d_v=4, seed=seed, positions=True)
    x = inputs.x_q  # (L, d_model): the token vectors with positions
    mha = multi_head_trace(x, w_q, w_k, w_v, w_o, h, is_causal=causal)
    w_k_g, w_v_g = mean_pool_kv(w_k, h, g), mean_pool_kv(w_v, h, g)  # (d_model, g·d_k)
    gqa = multi_head_trace(x, w_q, w_k_g, w_v_g, w_o, h, g, is_causal=causal)
    q, k, v = (t.unsqueeze(0) for t in (gqa.q, gqa.k, gqa.v))  # (1, h, L, d_k), (1, g, L, d_k) twice
    fused = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)[0]  # (h, L, d_k)
    diff = gqa.output - mha.output  # (L, d_model)
    run = decode_with_cache(x, w_q, w_k_g, w_v_g, w_o, h, g)
    full = multi_head_attention(x, w_q, w_k_g, w_v_g, w_o, h, g, is_causal=True)  # (L, d_model)
    return HeadsExample(
        tokens=inputs.query_tokens, d_k=d_model // h, q=merge_heads(mha.q), weights_mha=mha.heads.weights,
        weights_gqa=gqa.heads.weights, max_abs_diff=float(diff.abs().max()),
        rel_diff=float(diff.norm() / mha.output.norm().clamp_min(1e-30)),
        delta_torch=float((merge_heads(fused) @ w_o - gqa.output).abs().max()),
        decoded=run.weights, decode_diff=float((run.output - full).abs().max()),
    )  # fmt: skip
