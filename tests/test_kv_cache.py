"""The KV cache: one decoding step equals the last row of causal attention; cache sizes; the timing."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attention_core import multi_head_attention
from attention_core.kv_cache import (
    MODEL_SHAPES,
    decode_step,
    decode_with_cache,
    kv_cache_bytes,
    time_decode_steps,
)


def _weights(d_model: int, h: int, g: int, seed: int = 0):
    d_k = d_model // h
    gen = torch.Generator().manual_seed(seed)
    s = 1 / math.sqrt(d_model)
    shapes = ((d_model, h * d_k), (d_model, g * d_k), (d_model, g * d_k), (h * d_k, d_model))
    return tuple(torch.randn(*shape, generator=gen) * s for shape in shapes)


@settings(max_examples=40, deadline=None)
@given(
    h_g=st.sampled_from([(1, 1), (2, 2), (4, 1), (4, 2), (4, 4), (8, 2)]),
    t=st.integers(1, 12),
    d_k=st.integers(1, 8),
    seed=st.integers(0, 10_000),
)
def test_decode_step_is_the_last_row_of_causal_attention(h_g: tuple[int, int], t: int, d_k: int, seed: int) -> None:
    h, g = h_g
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(2, h, t, d_k, generator=gen)
    k, v = torch.randn(2, g, t, d_k, generator=gen), torch.randn(2, g, t, d_k, generator=gen)
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (2, h, t, d_k), torch's
    step = decode_step(q[..., -1:, :], k, v)  # (2, h, 1, d_k)
    torch.testing.assert_close(step, full[..., -1:, :], atol=1e-5, rtol=1e-4)


def test_decode_step_matches_every_earlier_row_given_the_cache_up_to_it(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 4, 6, 8, generator=gen).to(device) for _ in range(3))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for t in range(6):
        torch.testing.assert_close(decode_step(q[..., t : t + 1, :], k[..., : t + 1, :], v[..., : t + 1, :]),
                                   full[..., t : t + 1, :], atol=1e-5, rtol=1e-4)  # fmt: skip


@pytest.mark.parametrize(("h", "g"), [(4, 4), (4, 2), (4, 1)])
def test_token_by_token_decoding_equals_causal_attention_over_the_sequence(h: int, g: int) -> None:
    x = torch.randn(9, 16, generator=torch.Generator().manual_seed(5))
    w = _weights(16, h, g)
    run = decode_with_cache(x, *w, h, g)
    torch.testing.assert_close(run.output, multi_head_attention(x, *w, h, g, is_causal=True), atol=1e-5, rtol=1e-4)
    assert [tuple(wt.shape) for wt in run.weights] == [(h, t + 1) for t in range(9)]
    assert run.k.shape == (g, 9, 16 // h)
    torch.testing.assert_close(run.weights[-1].sum(-1), torch.ones(h))


def test_decode_step_rejects_bad_input() -> None:
    k = torch.randn(1, 2, 5, 4)
    with pytest.raises(ValueError, match="one new token"):
        decode_step(torch.randn(1, 2, 3, 4), k, k)
    with pytest.raises(ValueError, match="must divide"):
        decode_step(torch.randn(1, 3, 1, 4), k, k)
    with pytest.raises(ValueError, match="same feature size"):
        decode_step(torch.randn(1, 2, 1, 3), k, k)
    with pytest.raises(ValueError, match="NaN or inf"):
        decode_step(torch.full((1, 2, 1, 4), float("inf")), k, k)


def test_cache_bytes_agree_with_the_figures_people_quote() -> None:
    """Llama-2-7B in float16 keeps 0.5 MiB per token (2 GiB at 4096); Llama-3-8B a quarter of that."""
    l2, l3 = MODEL_SHAPES["Llama-2-7B"], MODEL_SHAPES["Llama-3-8B"]
    assert l2.cache_bytes(1) == 512 * 1024
    assert l2.cache_bytes(4096) == 2 * 2**30
    assert l3.cache_bytes(1) == 128 * 1024
    assert l3.cache_bytes(1, n_kv_heads=l3.n_heads) == l2.cache_bytes(1)  # its MHA twin
    assert MODEL_SHAPES["GPT-2 small"].cache_bytes(1024, dtype="float32") == 2 * 12 * 768 * 1024 * 4


@settings(max_examples=50, deadline=None)
@given(
    layers=st.integers(1, 100),
    g=st.integers(1, 64),
    d=st.integers(1, 256),
    ctx=st.integers(0, 1 << 17),
    batch=st.integers(1, 64),
    dtype=st.sampled_from(["float32", "float16", "bfloat16", "int8"]),
)
def test_cache_bytes_are_2_l_g_d_t_b_s(layers: int, g: int, d: int, ctx: int, batch: int, dtype: str) -> None:
    size = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1}[dtype]
    assert kv_cache_bytes(layers, g, d, ctx, batch, dtype) == 2 * layers * g * d * ctx * batch * size
    # the same as the bytes of real K and V tensors, per layer
    if ctx and layers * g * d * ctx * batch <= 1 << 16 and dtype != "int8":
        t = torch.empty(batch, g, ctx, d, dtype=getattr(torch, dtype))
        assert kv_cache_bytes(layers, g, d, ctx, batch, dtype) == 2 * layers * t.nbytes


def test_longest_context_is_the_largest_that_fits() -> None:
    m = MODEL_SHAPES["Llama-3-70B"]
    mem = 40 * 2**30
    n = m.longest_context(mem, 2)
    assert kv_cache_bytes(m.layers, m.n_kv_heads, m.head_dim, n, 2) <= mem
    assert kv_cache_bytes(m.layers, m.n_kv_heads, m.head_dim, n + 1, 2) > mem


@pytest.mark.parametrize("name", list(MODEL_SHAPES))
def test_published_shapes_are_consistent(name: str) -> None:
    m = MODEL_SHAPES[name]
    assert m.head_dim * m.n_heads == m.d_model
    assert m.n_heads % m.n_kv_heads == 0
    assert "config" in m.source
    assert m.kind == ("MHA" if m.n_kv_heads == m.n_heads else "GQA")


def test_kv_cache_bytes_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="layers must be ≥ 1"):
        kv_cache_bytes(0, 8, 128, 10)
    with pytest.raises(ValueError, match="dtype must be one of"):
        kv_cache_bytes(1, 8, 128, 10, 1, "float8")


def test_decode_timing_reports_every_context_and_agrees_numerically() -> None:
    r = time_decode_steps((8, 16, 32), d_model=16, n_heads=4, n_kv_heads=2, repeats=1, min_time_per_point=0.0)
    assert r.contexts == (8, 16, 32)
    assert len(r.cached_s) == 3 and all(t > 0 for t in r.cached_s)
    assert all(t is not None and t > 0 for t in r.recompute_s)
    assert r.max_abs_diff < 1e-5  # the cached step computes what recomputing computes
    assert r.fit("cached") is not None and math.isfinite(r.fit("cached")[0])


def test_decode_timing_stops_recomputing_when_the_budget_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    import attention_core.kv_cache as kv

    monkeypatch.setattr(kv, "HARD_STOP", 1e12)  # the cached steps may still run
    r = time_decode_steps((8, 16, 32, 64), d_model=16, n_heads=2, repeats=1, min_time_per_point=0.0, budget_s=1e-9)
    assert r.recompute_s[0] is not None and r.recompute_s[1:] == (None, None, None)
    assert len(r.points("cached")[0]) == 4 and r.fit("recompute") is None


def test_decode_timing_starts_nothing_past_its_hard_stop() -> None:
    r = time_decode_steps((8, 16, 32), d_model=16, n_heads=2, repeats=1, min_time_per_point=0.0, budget_s=1e-9)
    assert r.cached_s[0] is not None and r.cached_s[1:] == (None, None)
    assert r.points("cached") == ([8], [r.cached_s[0]]) and r.fit("cached") is None


def test_decode_timing_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="at least two"):
        time_decode_steps((8,))
    with pytest.raises(ValueError, match="divisible"):
        time_decode_steps((8, 16), d_model=10, n_heads=4)
