"""Multi-head, grouped-query and multi-query attention against torch's own implementations."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

from attention_core import heads

ATOL = 1e-5  # float32


def weights(d_model: int, h: int, g: int, *, d_k: int | None = None, seed: int = 0, device: str = "cpu"):
    d_k = d_model // h if d_k is None else d_k
    gen = torch.Generator().manual_seed(seed)
    s = 1 / math.sqrt(d_model)
    w_q = torch.randn(d_model, h * d_k, generator=gen) * s
    w_k = torch.randn(d_model, g * d_k, generator=gen) * s
    w_v = torch.randn(d_model, g * d_k, generator=gen) * s
    w_o = torch.randn(h * d_k, d_model, generator=gen) * s
    return tuple(w.to(device) for w in (w_q, w_k, w_v, w_o))


def torch_gqa(x, w_q, w_k, w_v, w_o, h, g, **kw):
    """The same projections, attended by torch's fused SDPA with enable_gqa=True."""
    B, L, _ = x.shape
    q = (x @ w_q).view(B, L, h, -1).transpose(1, 2)  # (B, h, L, d_k)
    k = (x @ w_k).view(B, L, g, -1).transpose(1, 2)  # (B, g, L, d_k)
    v = (x @ w_v).view(B, L, g, -1).transpose(1, 2)  # (B, g, L, d_v)
    y = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)  # (B, h, L, d_v)
    return y.transpose(1, 2).reshape(B, L, -1) @ w_o  # (B, L, d_model)


@pytest.mark.parametrize(("h", "g"), [(4, 4), (4, 2), (4, 1), (8, 2), (6, 3)])
@pytest.mark.parametrize("causal", [False, True])
def test_equals_torch_sdpa_with_enable_gqa(h: int, g: int, causal: bool, device: torch.device) -> None:
    x = torch.randn(2, 7, 24, generator=torch.Generator().manual_seed(1)).to(device)
    w = weights(24, h, g, device=str(device))
    ours = heads.multi_head_attention(x, *w, h, g, is_causal=causal)
    ref = torch_gqa(x, *w, h, g, is_causal=causal)
    assert ours.shape == (2, 7, 24)
    torch.testing.assert_close(ours, ref, atol=ATOL, rtol=1e-4)


def test_equals_torch_sdpa_with_a_boolean_mask() -> None:
    x = torch.randn(1, 5, 16)
    mask = torch.rand(5, 5, generator=torch.Generator().manual_seed(3)) > 0.3
    mask[:, 0] = True  # every query keeps a key
    w = weights(16, 4, 2)
    torch.testing.assert_close(
        heads.multi_head_attention(x, *w, 4, 2, attn_mask=mask), torch_gqa(x, *w, 4, 2, attn_mask=mask),
        atol=ATOL, rtol=1e-4,
    )  # fmt: skip


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_mha_equals_torch_multihead_attention_with_its_weights_copied_in(h: int, device: torch.device) -> None:
    d_model = 32
    ref = nn.MultiheadAttention(d_model, h, bias=False, batch_first=True).to(device).eval()
    # torch's layer computes x Wᵀ; ours computes x W, so ours are the transposes of its matrices.
    w_q, w_k, w_v = (w.detach().T.contiguous() for w in ref.in_proj_weight.chunk(3, dim=0))
    w_o = ref.out_proj.weight.detach().T.contiguous()
    x = torch.randn(3, 9, d_model, generator=torch.Generator().manual_seed(2)).to(device)
    expected, expected_w = ref(x, x, x, need_weights=True, average_attn_weights=False)
    tr = heads.multi_head_trace(x, w_q, w_k, w_v, w_o, h)
    torch.testing.assert_close(tr.output, expected, atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(tr.heads.weights, expected_w, atol=ATOL, rtol=1e-4)  # each head's weights
    causal = torch.ones(9, 9, dtype=torch.bool, device=device).tril()
    expected_c, _ = ref(x, x, x, attn_mask=~causal, need_weights=False)  # torch: True = blocked
    torch.testing.assert_close(heads.multi_head_attention(x, w_q, w_k, w_v, w_o, h, is_causal=True), expected_c,
                               atol=ATOL, rtol=1e-4)  # fmt: skip


def test_cross_attention_takes_keys_from_another_sequence() -> None:
    x, mem = torch.randn(1, 4, 16), torch.randn(1, 6, 16)
    w = weights(16, 4, 2)
    tr = heads.multi_head_trace(x, *w, 4, 2, x_kv=mem)
    assert tr.heads.weights.shape == (1, 4, 4, 6)
    q = heads.split_heads(x @ w[0], 4)
    k, v = heads.split_heads(mem @ w[1], 2), heads.split_heads(mem @ w[2], 2)
    ref = heads.merge_heads(F.scaled_dot_product_attention(q, k, v, enable_gqa=True)) @ w[3]
    torch.testing.assert_close(tr.output, ref, atol=ATOL, rtol=1e-4)


def test_query_head_i_reads_kv_head_i_over_group_size() -> None:
    assert [heads.kv_head_of(i, 8, 2) for i in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [heads.kv_head_of(i, 8, 8) for i in range(8)] == list(range(8))
    assert {heads.kv_head_of(i, 8, 1) for i in range(8)} == {0}
    t = torch.arange(2.0).view(2, 1, 1)  # K/V head j holds the number j
    assert heads.repeat_kv(t, 6).flatten().tolist() == [0, 0, 0, 1, 1, 1]


def test_split_and_merge_are_inverse_and_slice_the_features() -> None:
    t = torch.arange(2 * 3 * 12, dtype=torch.float32).view(2, 3, 12)  # (N, L, h·d)
    split = heads.split_heads(t, 4)  # (N, 4, L, 3)
    assert split.shape == (2, 4, 3, 3)
    torch.testing.assert_close(split[:, 1], t[..., 3:6])  # head 1 is features 3..5
    torch.testing.assert_close(heads.merge_heads(split), t)


@settings(max_examples=40, deadline=None)
@given(
    h_g=st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 1), (4, 2), (4, 4), (6, 2), (6, 3), (8, 4)]),
    d_k=st.integers(1, 8),
    L=st.integers(1, 9),
    S=st.integers(1, 9),
    batch=st.integers(1, 2),
    seed=st.integers(0, 10_000),
)
def test_any_grouping_matches_a_float64_reference(
    h_g: tuple[int, int], d_k: int, L: int, S: int, batch: int, seed: int
) -> None:
    h, g = h_g
    d_model = 8
    gen = torch.Generator().manual_seed(seed)
    x, mem = torch.randn(batch, L, d_model, generator=gen), torch.randn(batch, S, d_model, generator=gen)
    w = weights(d_model, h, g, d_k=d_k, seed=seed)
    tr = heads.multi_head_trace(x, *w, h, g, x_kv=mem)
    # the reference: every head by hand, in float64, one loop iteration per query head
    xd, md = x.double(), mem.double()
    w_q, w_k, w_v, w_o = (t.double() for t in w)
    outs = []
    for i in range(h):
        j = i // (h // g)
        q = xd @ w_q[:, i * d_k : (i + 1) * d_k]
        k = md @ w_k[:, j * d_k : (j + 1) * d_k]
        v = md @ w_v[:, j * d_k : (j + 1) * d_k]
        outs.append(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d_k), dim=-1) @ v)
    ref = torch.cat(outs, dim=-1) @ w_o
    torch.testing.assert_close(tr.output.double(), ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(tr.heads.weights.sum(-1), torch.ones(batch, h, L), atol=1e-5, rtol=0)


@settings(max_examples=25, deadline=None)
@given(h_g=st.sampled_from([(2, 1), (4, 1), (4, 2), (8, 2), (6, 3)]), seed=st.integers(0, 10_000))
def test_gqa_is_mha_whose_kv_heads_repeat_within_each_group(h_g: tuple[int, int], seed: int) -> None:
    """MHA with identical K/V heads inside each group computes exactly what GQA computes."""
    h, g = h_g
    d_model, d_k = 12, 3
    w_q, w_k, w_v, w_o = weights(d_model, h, g, d_k=d_k, seed=seed)
    w_k_mha = heads.repeat_kv(w_k.T.reshape(g, d_k, d_model), h).reshape(h * d_k, d_model).T  # (d_model, h·d_k)
    w_v_mha = heads.repeat_kv(w_v.T.reshape(g, d_k, d_model), h).reshape(h * d_k, d_model).T
    x = torch.randn(2, 5, d_model, generator=torch.Generator().manual_seed(seed))
    torch.testing.assert_close(
        heads.multi_head_attention(x, w_q, w_k, w_v, w_o, h, g),
        heads.multi_head_attention(x, w_q, w_k_mha, w_v_mha, w_o, h),
        atol=ATOL,
        rtol=1e-4,
    )
    # ... and mean-pooling those repeated heads gives the GQA projections back
    torch.testing.assert_close(heads.mean_pool_kv(w_k_mha, h, g), w_k)


def test_mean_pool_averages_the_heads_of_each_group() -> None:
    w = torch.arange(4.0).repeat_interleave(2).view(1, 8)  # 4 heads of width 2: head j is all j
    assert heads.mean_pool_kv(w, 4, 2).tolist() == [[0.5, 0.5, 2.5, 2.5]]
    assert heads.mean_pool_kv(w, 4, 1).tolist() == [[1.5, 1.5]]
    torch.testing.assert_close(heads.mean_pool_kv(w, 4, 4), w)


@pytest.mark.parametrize(("h", "g"), [(1, 1), (4, 4), (8, 8), (8, 2), (8, 1)])
def test_parameter_count_matches_torch_modules(h: int, g: int) -> None:
    d = 64
    kv = g * d // h
    modules = [nn.Linear(d, d, bias=False), nn.Linear(d, kv, bias=False), nn.Linear(d, kv, bias=False),
               nn.Linear(d, d, bias=False)]  # fmt: skip
    assert heads.attention_parameters(d, h, g) == sum(p.numel() for m in modules for p in m.parameters())
    if g == h:
        mha = nn.MultiheadAttention(d, h, bias=False)
        assert heads.attention_parameters(d, h) == sum(p.numel() for p in mha.parameters())
        with_bias = nn.MultiheadAttention(d, h)
        assert heads.attention_parameters(d, h, bias=True) == sum(p.numel() for p in with_bias.parameters())


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"n_heads": 4, "n_kv_heads": 3}, "must divide n_heads"),
        ({"n_heads": 4, "n_kv_heads": 8}, "cannot exceed"),
        ({"n_heads": 0}, "n_heads must be ≥ 1"),
        ({"n_heads": 5}, "divisible by n_heads = 5"),
        ({"n_heads": 4, "n_kv_heads": 0}, "n_kv_heads must be ≥ 1"),
        ({"n_heads": 2.0}, "must be an integer"),
    ],
)
def test_bad_head_counts_raise_a_clear_value_error(kwargs: dict, needle: str) -> None:
    x = torch.randn(1, 3, 16)
    w = weights(16, 4, 4)
    with pytest.raises(ValueError, match=needle):
        heads.multi_head_attention(x, *w, **kwargs)


def test_bad_shapes_and_values_raise_value_errors() -> None:
    x = torch.randn(1, 3, 16)
    w_q, w_k, w_v, w_o = weights(16, 4, 2)
    with pytest.raises(ValueError, match="w_k must have n_kv_heads"):
        heads.multi_head_attention(x, w_q, w_k, w_v, w_o, 4, 4)
    with pytest.raises(ValueError, match=r"shape \(d_model=16, d\)"):
        heads.multi_head_attention(x, w_q[:8], w_k, w_v, w_o, 4, 2)
    with pytest.raises(ValueError, match="w_o must have"):
        heads.multi_head_attention(x, w_q, w_k, w_v, w_o[:8], 4, 2)
    with pytest.raises(ValueError, match="NaN or inf"):
        heads.multi_head_attention(x.clone().fill_(float("nan")), w_q, w_k, w_v, w_o, 4, 2)
    with pytest.raises(ValueError, match="dtype and device"):
        heads.multi_head_attention(x.double(), w_q, w_k, w_v, w_o, 4, 2)
    with pytest.raises(ValueError, match="x_kv must have the width"):
        heads.multi_head_attention(x, w_q, w_k, w_v, w_o, 4, 2, x_kv=torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        heads.multi_head_attention(x, w_q, w_k, w_v, w_o, 4, 2, is_causal=True, attn_mask=torch.ones(3, 3) > 0)
    with pytest.raises(ValueError, match=r"must be a torch\.Tensor"):
        heads.multi_head_attention([[1.0]], w_q, w_k, w_v, w_o, 4, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be split"):
        heads.split_heads(torch.randn(2, 10), 4)
    with pytest.raises(ValueError, match="must divide"):
        heads.check_head_counts(6, 4)
