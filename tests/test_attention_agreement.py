"""The attention core against torch's SDPA and a float64 reference, case by case.

One case per situation the issue names (batch and heads, d_v ≠ d_k, broadcast lead dims,
bool and float masks, causal with n_q ≠ n_k, a given scale), then FlashAttention's
acceptance rule in float32, float16 and bfloat16.
"""

from __future__ import annotations

import pytest
import torch
from attention_checks import NEG_INF, make_mask, max_err, randn, reference_weights
from torch.nn import functional as F

from attention_core import attention_trace, dot_product_attention, flash_rule, reference_attention

# One row per situation the issue names: (id, q shape, k shape, v shape, mask kind, mask shape, is_causal, scale)
CASES = [
    ("2d", (5, 8), (7, 8), (7, 8), None, None, False, None),
    ("batch_heads", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), None, None, False, None),
    ("dv_ne_dk", (2, 5, 8), (2, 7, 8), (2, 7, 3), None, None, False, None),
    ("broadcast_lead_dims", (2, 1, 5, 8), (1, 3, 7, 8), (1, 3, 7, 4), None, None, False, None),
    ("bool_mask_full", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), "bool", (2, 3, 5, 7), False, None),
    ("bool_mask_broadcast", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), "bool", (2, 1, 5, 7), False, None),
    ("bool_mask_2d", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), "bool", (5, 7), False, None),
    ("float_mask", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), "float", (2, 3, 5, 7), False, None),
    ("float_mask_broadcast", (4, 6, 8), (4, 6, 8), (4, 6, 2), "float", (1, 6, 6), False, None),
    ("causal_square", (2, 6, 8), (2, 6, 8), (2, 6, 8), None, None, True, None),
    ("causal_L_lt_S", (2, 3, 4, 8), (2, 3, 9, 8), (2, 3, 9, 5), None, None, True, None),
    ("causal_L_gt_S", (2, 3, 9, 8), (2, 3, 4, 8), (2, 3, 4, 5), None, None, True, None),
    ("scale_small", (2, 5, 8), (2, 7, 8), (2, 7, 8), None, None, False, 0.05),
    ("scale_large", (2, 5, 8), (2, 7, 8), (2, 7, 8), "bool", (2, 5, 7), False, 2.5),
    ("scale_with_causal", (2, 7, 16), (2, 5, 16), (2, 5, 4), None, None, True, 0.3),
]


def case_inputs(case: tuple, device: torch.device | str, seed: int, dtype: torch.dtype = torch.float32):
    _, q_shape, k_shape, v_shape, mask_kind, mask_shape, is_causal, scale = case
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (randn(gen, *shape, device=device).to(dtype) for shape in (q_shape, k_shape, v_shape))
    mask = make_mask(mask_kind, mask_shape, gen, device) if mask_kind else None
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.to(dtype)
    return q, k, v, mask, is_causal, scale


def case_id(case: tuple) -> str:
    return case[0]


# ---------------------------------------------------------------- agreement with torch and float64


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_matches_torch_sdpa(case: tuple, device: torch.device) -> None:
    q, k, v, mask, is_causal, scale = case_inputs(case, device, seed=len(case[0]))
    expected = F.scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal, scale=scale)
    ours = dot_product_attention(q, k, v, mask, 0.0, is_causal, scale=scale)
    assert ours.shape == expected.shape
    if device.type == "cpu":  # here torch's kernel and ours agree to float32's default tolerance
        torch.testing.assert_close(ours, expected)
        torch.testing.assert_close(attention_trace(q, k, v, mask, 0.0, is_causal, scale=scale).output, expected)
    # on every device, both pass FlashAttention's rule against float64, so they agree within it
    for out in (ours, expected):
        check = flash_rule(out, q, k, v, mask, is_causal, scale=scale)
        assert check.passes, check.describe()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_matches_float64_reference(case: tuple, device: torch.device) -> None:
    q, k, v, mask, is_causal, scale = case_inputs(case, device, seed=100 + len(case[0]))
    ref_w = reference_weights(q, k, mask, is_causal=is_causal, scale=scale)
    ref_out = reference_attention(q, k, v, mask, is_causal, scale=scale)
    trace = attention_trace(q, k, v, mask, 0.0, is_causal, scale=scale)
    if device.type == "cpu":  # bounds measured on the CPU
        assert max_err(trace.weights, ref_w) < 1e-6
        assert max_err(trace.output, ref_out) < 1e-5
    # FlashAttention's rule on every device: at most 2× the error of textbook attention, same dtype
    check = flash_rule(trace.output, q, k, v, mask, is_causal, scale=scale)
    assert check.passes, check.describe()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_flashattention_acceptance(dtype: torch.dtype, device: torch.device) -> None:
    """FlashAttention's rule: error vs a float64 reference ≤ 2 × the error of textbook attention
    (softmax(q kᵀ s) v in plain torch ops) in the same dtype on the same device."""
    gen = torch.Generator().manual_seed(7)
    q32, k32 = randn(gen, 2, 4, 24, 16, scale=2.0), randn(gen, 2, 4, 30, 16, scale=2.0)
    v32 = randn(gen, 2, 4, 30, 16)
    mask32 = make_mask("bool", (2, 1, 24, 30), gen, "cpu")
    ref = reference_attention(q32, k32, v32, mask32)
    q, k, v, mask = (t.to(device) for t in (q32, k32, v32, mask32))
    q, k, v = (t.to(dtype) for t in (q, k, v))
    ours = dot_product_attention(q, k, v, mask)
    scores = (q @ k.transpose(-2, -1)) / 4.0  # (2, 4, 24, 30), 1/√16 = 1/4
    base = torch.softmax(scores.masked_fill(~mask, NEG_INF), dim=-1).nan_to_num(0.0) @ v  # (2, 4, 24, 16)
    err_ours, err_base = max_err(ours, ref), max_err(base, ref)
    assert err_base > 0
    assert err_ours <= 2 * err_base, f"ours {err_ours:.3g} vs baseline {err_base:.3g}"
    check = flash_rule(ours, q, k, v, mask)  # the helper the other tests use (its float64 is of q, k, v as cast)
    assert check.passes, check.describe()
