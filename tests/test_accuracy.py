"""FlashAttention's rule as a helper: the textbook baseline, the float64 reference, the verdict, a subset of rows."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention_core import (
    dot_product_attention,
    flash_rule,
    padding_mask,
    reference_attention,
    textbook_attention,
    tiled_attention,
)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def qkv(device: torch.device, dtype: torch.dtype = torch.float32, L: int = 48, S: int = 40):
    gen = torch.Generator().manual_seed(3)
    shapes = ((2, 3, L, 16), (2, 3, S, 16), (2, 3, S, 8))
    return tuple((2 * torch.randn(s, generator=gen)).to(device=device, dtype=dtype) for s in shapes)


def test_textbook_and_reference_attention_are_torchs_attention(device: torch.device) -> None:
    q, k, v = qkv(device)
    mask = padding_mask([40, 7], 40, device=device).unsqueeze(1)  # (2, 1, 1, 40)
    float_mask = torch.randn(48, 40, generator=torch.Generator().manual_seed(4)).to(device)  # (L, S), added
    for kwargs in ({}, {"attn_mask": mask}, {"attn_mask": float_mask}, {"is_causal": True}, {"scale": 0.3}):
        as64 = {key: x.double() if torch.is_tensor(x) and x.is_floating_point() else x for key, x in kwargs.items()}
        expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), **as64)
        ref = reference_attention(q, k, v, **kwargs)
        assert ref.dtype == torch.float64 and ref.device == q.device
        torch.testing.assert_close(ref, expected)
        torch.testing.assert_close(textbook_attention(q.double(), k.double(), v.double(), **kwargs), expected)
        out = textbook_attention(q, k, v, **kwargs)
        assert out.dtype == q.dtype
        torch.testing.assert_close(out, expected.float(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("fn", [textbook_attention, reference_attention])
def test_a_fully_masked_row_gives_zeros_not_nan(device: torch.device, fn) -> None:
    q, k, v = qkv(device)
    mask = padding_mask([0, 40], 40, device=device).unsqueeze(1)  # item 0 has no key at all
    for m in (mask, torch.zeros(mask.shape, device=device).masked_fill(~mask, float("-inf"))):  # bool, float
        out = fn(q, k, v, m)
        assert torch.equal(out[0], torch.zeros_like(out[0])) and bool(torch.isfinite(out).all())


def test_textbook_and_reference_attention_check_their_inputs() -> None:
    q, k, v = qkv(torch.device("cpu"))
    for fn in (textbook_attention, reference_attention):
        with pytest.raises(ValueError, match="feature size E"):
            fn(q, k[..., :8], v)
        with pytest.raises(ValueError, match="not both"):
            fn(q, k, v, torch.ones(48, 40, dtype=torch.bool), is_causal=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_rule_passes_real_kernels_and_fails_a_perturbed_one(device: torch.device, dtype: torch.dtype) -> None:
    q, k, v = qkv(device, dtype)
    for causal in (False, True):
        for out in (
            F.scaled_dot_product_attention(q, k, v, is_causal=causal),
            dot_product_attention(q, k, v, is_causal=causal),
            tiled_attention(q, k, v, is_causal=causal, block_size=16),
        ):
            check = flash_rule(out, q, k, v, is_causal=causal)
            assert check.passes, check.describe()
            assert check.baseline_error > 0 and check.bound >= 2 * check.baseline_error
        wrong = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=1.0)  # a real bug: no ÷√d_k
        check = flash_rule(wrong, q, k, v, is_causal=causal)
        assert not check.passes and "FAIL" in check.describe()


@pytest.mark.parametrize("causal", [False, True])
def test_checking_some_rows_agrees_with_checking_all(device: torch.device, causal: bool) -> None:
    q, k, v = qkv(device, torch.float16, L=40, S=40)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    rows = torch.tensor([0, 9, 39])
    part = flash_rule(out, q, k, v, is_causal=causal, rows=rows)
    # the same rows checked by hand: the float64 answer on those queries, with the causal rule kept
    ref = reference_attention(q, k, v, is_causal=causal)[..., rows.to(device), :]
    assert part.error == pytest.approx(float((out[..., rows.to(device), :].double() - ref).abs().max()))
    whole = flash_rule(out, q, k, v, is_causal=causal)
    assert part.error <= whole.error and part.baseline_error <= whole.baseline_error


@pytest.mark.parametrize("mask_shape", [(40,), (1, 40), (3, 1, 40), (40, 40)])
def test_checking_some_rows_takes_a_mask_of_any_broadcast_shape(device: torch.device, mask_shape) -> None:
    q, k, v = qkv(device, torch.float16, L=40, S=40)  # (2, 3, 40, E)
    mask = torch.rand(mask_shape, generator=torch.Generator().manual_seed(3)).to(device) > 0.3
    out = dot_product_attention(q, k, v, mask)  # torch's CPU SDPA rejects a 1-D mask in float16
    rows = torch.tensor([0, 9, 39])
    part = flash_rule(out, q, k, v, mask, rows=rows)
    ref = reference_attention(q, k, v, mask)[..., rows.to(device), :]  # every row checked, then the three picked
    assert part.error == pytest.approx(float((out[..., rows.to(device), :].double() - ref).abs().max()))


def test_bad_arguments_are_explained() -> None:
    q, k, v = qkv(torch.device("cpu"))
    out = textbook_attention(q, k, v)
    with pytest.raises(ValueError, match="rows must be"):
        flash_rule(out, q, k, v, rows=torch.tensor([48]))
    with pytest.raises(ValueError, match="out must have"):
        flash_rule(out[..., :3, :], q, k, v)
