"""Projections, sinusoidal positions and the SelfAttention layer's two paths."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from attention_core import SelfAttention, causal_mask, padding_mask, project_qkv, sinusoidal_positions, xavier_std

# ---------------------------------------------------------------- project_qkv


def test_project_qkv_matches_a_float64_matmul(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(31)
    x = torch.randn(2, 3, 5, 6, generator=gen).to(device)  # (N, nh-like extra dim, L, d_model)
    w_q, w_k, w_v = (torch.randn(6, d, generator=gen).to(device) for d in (4, 4, 3))
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    assert q.shape == (2, 3, 5, 4) and k.shape == (2, 3, 5, 4) and v.shape == (2, 3, 5, 3)
    x64 = x.cpu().double().numpy()
    for got, w in ((q, w_q), (k, w_k), (v, w_v)):
        expected = np.einsum("abld,de->able", x64, w.cpu().double().numpy())
        assert np.abs(got.cpu().double().numpy() - expected).max() < 1e-5


@pytest.mark.parametrize(
    "shapes, match",
    [
        (((3, 4), (5, 2), (4, 2), (4, 2)), "w_q must have shape \\(d_model=4, d\\)"),
        (((3, 4), (4, 2), (4, 2, 1), (4, 2)), "w_k must have shape"),
        (((3, 4), (4, 2), (4, 2), (3, 2)), "w_v must have shape"),
        (((3, 4), (4, 2), (4, 3), (4, 2)), "same d_k"),
        (((4,), (4, 2), (4, 2), (4, 2)), "x must have at least 2 dimension"),
    ],
)
def test_project_qkv_shape_mismatches(shapes: tuple, match: str) -> None:
    x, w_q, w_k, w_v = (torch.ones(*s) for s in shapes)
    with pytest.raises(ValueError, match=match):
        project_qkv(x, w_q, w_k, w_v)


def test_project_qkv_dtype_and_value_errors() -> None:
    x, w = torch.ones(3, 4), torch.ones(4, 2)
    with pytest.raises(ValueError, match="match x's dtype"):
        project_qkv(x, w.double(), w, w)
    with pytest.raises(ValueError, match="x must have a floating dtype"):
        project_qkv(torch.ones(3, 4, dtype=torch.int64), w, w, w)
    bad = w.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="w_v contains NaN or inf"):
        project_qkv(x, w, w, bad)


# ---------------------------------------------------------------- sinusoidal_positions


def positions_by_hand(n: int, d_model: int) -> list[list[float]]:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(the same angle)."""
    table = []
    for pos in range(n):
        row = []
        for f in range(d_model):
            angle = pos / 10000 ** ((f - f % 2) / d_model)
            row.append(math.sin(angle) if f % 2 == 0 else math.cos(angle))
        table.append(row)
    return table


@pytest.mark.parametrize("n, d_model", [(1, 1), (3, 1), (5, 4), (7, 5), (11, 16), (50, 9)])
def test_sinusoidal_positions_match_the_formula(n: int, d_model: int) -> None:
    pe = sinusoidal_positions(n, d_model, dtype=torch.float64)
    assert pe.shape == (n, d_model)
    assert pe.dtype == torch.float64
    np.testing.assert_allclose(pe.numpy(), np.array(positions_by_hand(n, d_model)), rtol=0, atol=1e-12)


def test_sinusoidal_positions_dtype_and_device(device: torch.device) -> None:
    pe = sinusoidal_positions(4, 6, device=device)
    assert pe.dtype == torch.float32 and pe.device.type == device.type
    assert pe[0].cpu().tolist() == [0.0, 1.0] * 3  # position 0: sin 0 = 0, cos 0 = 1


def test_sinusoidal_positions_follow_the_default_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_DEVICE", "cpu")
    assert sinusoidal_positions(2, 2).device.type == "cpu"
    assert sinusoidal_positions(2, 2, device="auto").device.type == "cpu"


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((0, 4), {}, "n must be ≥ 1"),
        ((-2, 4), {}, "n must be ≥ 1"),
        ((3, 0), {}, "d_model must be ≥ 1"),
        ((2.5, 4), {}, "n must be an integer"),
        ((3, "8"), {}, "d_model must be an integer"),
        ((3, 1 << 17), {}, "d_model must be ≤"),
        ((3, 4), {"dtype": torch.int64}, "floating torch.dtype"),
        ((3, 4), {"device": "gpu"}, "device must be"),
    ],
)
def test_sinusoidal_positions_errors(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sinusoidal_positions(*args, **kwargs)


# ---------------------------------------------------------------- SelfAttention


def make_layer(d_model: int, n_heads: int, device: torch.device, *, seed: int, **kwargs) -> SelfAttention:
    torch.manual_seed(seed)  # Xavier init draws from the global generator
    layer = SelfAttention(d_model, n_heads, **kwargs).to(device).eval()
    with torch.no_grad():  # non-zero biases, so a bias mix-up would show
        for lin in (layer.w_q, layer.w_k, layer.w_v, layer.w_o):
            lin.bias.normal_()
    return layer


def masks_for(kind: str, device: torch.device) -> torch.Tensor | None:
    """Masks for x of shape (2, 5, d_model) and scores (2, nh, 5, 5)."""
    if kind == "none":
        return None
    if kind == "bool":
        gen = torch.Generator().manual_seed(41)
        m = torch.rand(2, 1, 5, 5, generator=gen) < 0.6
        m[..., 0] = True  # every query keeps at least one key
        return m.to(device)
    if kind == "float":
        gen = torch.Generator().manual_seed(42)
        m = torch.randn(5, 5, generator=gen)
        m[1, 2:] = float("-inf")
        return m.to(device)
    if kind == "padding_with_empty_item":
        return padding_mask([3, 0], 5, device=device).unsqueeze(1)  # (2, 1, 1, 5); item 1 has no key
    raise AssertionError(kind)


@pytest.mark.parametrize("n_heads", [1, 2, 4])
@pytest.mark.parametrize(
    "mask_kind, causal",
    [("none", False), ("none", True), ("bool", False), ("float", False), ("padding_with_empty_item", False)],
)
def test_fused_and_trace_paths_agree(n_heads: int, mask_kind: str, causal: bool, device: torch.device) -> None:
    layer = make_layer(8, n_heads, device, seed=n_heads, is_causal=causal, dropout=0.3)  # eval: no dropout
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(43)).to(device)
    mask = masks_for(mask_kind, device)
    with torch.no_grad():
        fused, no_trace = layer(x, mask, need_weights=False)
        traced, trace = layer(x, mask, need_weights=True)
    assert no_trace is None
    assert trace is not None
    assert fused.shape == traced.shape == (2, 5, 8)
    assert trace.weights.shape == (2, n_heads, 5, 5)
    assert trace.output.shape == (2, n_heads, 5, 8 // n_heads)
    assert trace.dropout_keep is None
    assert torch.isfinite(fused).all()
    torch.testing.assert_close(fused, traced)
    if causal:
        assert (trace.weights.cpu()[..., ~torch.ones(5, 5, dtype=torch.bool).tril()] == 0).all()


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_matches_torch_multihead_attention(causal: bool, device: torch.device) -> None:
    """An independent reference: torch's nn.MultiheadAttention with the same four matrices."""
    d_model, n_heads = 12, 3
    layer = make_layer(d_model, n_heads, device, seed=44, is_causal=causal)
    mha = nn.MultiheadAttention(d_model, n_heads, batch_first=True).to(device).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([layer.w_q.weight, layer.w_k.weight, layer.w_v.weight]))
        mha.in_proj_bias.copy_(torch.cat([layer.w_q.bias, layer.w_k.bias, layer.w_v.bias]))
        mha.out_proj.weight.copy_(layer.w_o.weight)
        mha.out_proj.bias.copy_(layer.w_o.bias)
    x = torch.randn(2, 6, d_model, generator=torch.Generator().manual_seed(45)).to(device)
    blocked = ~causal_mask(6, 6, device=device) if causal else None  # MHA's bool mask: True = blocked
    with torch.no_grad():
        expected, expected_w = mha(x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False)
        ours, trace = layer(x, need_weights=True)
        fused, _ = layer(x)
    assert trace is not None
    torch.testing.assert_close(ours, expected)
    torch.testing.assert_close(fused, expected)
    torch.testing.assert_close(trace.weights, expected_w)


def test_unbatched_input_shapes(device: torch.device) -> None:
    layer = make_layer(6, 2, device, seed=46)
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(47)).to(device)  # (L, d_model)
    with torch.no_grad():
        y, trace = layer(x, need_weights=True)
        y_fused, _ = layer(x)
    assert trace is not None
    assert y.shape == (4, 6) and trace.weights.shape == (2, 4, 4)
    torch.testing.assert_close(y_fused, y)


def test_dropout_only_in_training(device: torch.device) -> None:
    layer = make_layer(8, 2, device, seed=48, dropout=0.5)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(49)).to(device)
    with torch.no_grad():
        _, trace_eval = layer(x, need_weights=True)
        layer.train()
        _, trace_train = layer(x, need_weights=True)
    assert trace_eval is not None and trace_eval.dropout_keep is None
    assert trace_train is not None and trace_train.dropout_p == 0.5
    assert trace_train.dropout_keep is not None
    assert not trace_train.dropout_keep.all()  # 100 cells at p = 0.5: all kept has odds 2⁻¹⁰⁰


def test_xavier_initialisation() -> None:
    torch.manual_seed(50)
    layer = SelfAttention(256, 4)
    bound = math.sqrt(6.0 / (256 + 256))  # Xavier-uniform draws from [−bound, bound]
    for lin in (layer.w_q, layer.w_k, layer.w_v, layer.w_o):
        assert lin.weight.abs().max() <= bound
        assert lin.weight.std().item() == pytest.approx(xavier_std(256, 256), rel=0.03)
        assert torch.equal(lin.bias, torch.zeros(256))
    assert SelfAttention(8, 2, bias=False).w_q.bias is None


def test_xavier_std_formula() -> None:
    assert xavier_std(3, 5) == pytest.approx(math.sqrt(2 / 8))
    with pytest.raises(ValueError, match="fan_in must be ≥ 1"):
        xavier_std(0, 5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d_model": 6, "n_heads": 4}, "divisible by n_heads"),
        ({"d_model": 0}, "d_model must be ≥ 1"),
        ({"d_model": 8, "n_heads": 0}, "n_heads must be ≥ 1"),
        ({"d_model": 8, "dropout": 1.0}, "dropout must be < 1"),
        ({"d_model": 8, "dropout": -0.1}, "dropout must be ≥ 0"),
        ({"d_model": 8.0}, "d_model must be an integer"),
    ],
)
def test_self_attention_construction_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SelfAttention(**kwargs)


@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "trace"])
def test_self_attention_forward_errors(need_weights: bool) -> None:
    """Both paths reject the same inputs with the same ValueError."""
    layer = SelfAttention(8, 2).eval()
    x = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match="d_model=8"):
        layer(torch.randn(2, 5, 6), need_weights=need_weights)
    with pytest.raises(ValueError, match="floating dtype"):
        layer(torch.ones(2, 5, 8, dtype=torch.int64), need_weights=need_weights)
    with pytest.raises(ValueError, match="NaN or inf"):
        layer(x.masked_fill(x > 1, float("nan")), need_weights=need_weights)
    with pytest.raises(ValueError, match="does not broadcast"):
        layer(x, torch.ones(4, 4, dtype=torch.bool), need_weights=need_weights)
    causal = SelfAttention(8, 2, is_causal=True).eval()
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        causal(x, torch.ones(5, 5, dtype=torch.bool), need_weights=need_weights)
