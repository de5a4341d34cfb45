"""Fully masked rows give zeros, not NaN (as torch's fused kernels do), and the stable softmax beneath."""

from __future__ import annotations

import pytest
import torch
from attention_checks import NEG_INF, max_err, randn
from torch.nn import functional as F

from attention_core import (
    attention_trace,
    dot_product_attention,
    padding_mask,
    reference_attention,
    stable_softmax,
)

# ---------------------------------------------------------------- fully masked rows


def test_padding_length_zero_gives_zero_row(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(6)
    q, k, v = randn(gen, 3, 4, 8, device=device), randn(gen, 3, 6, 8, device=device), randn(gen, 3, 6, 5, device=device)
    mask = padding_mask([0, 6, 2], 6, device=device)  # (3, 1, 6): item 0 has no real key
    t = attention_trace(q, k, v, mask)
    assert not torch.isnan(t.weights).any() and not torch.isnan(t.output).any()
    assert torch.equal(t.weights[0], torch.zeros_like(t.weights[0]))
    assert torch.equal(t.output[0], torch.zeros_like(t.output[0]))
    assert t.fully_masked_rows.cpu().tolist() == [[True] * 4, [False] * 4, [False] * 4]
    # torch 2.13's CPU SDPA (and the fused CUDA kernels) also give zeros here; we agree everywhere.
    expected = F.scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(expected[0], torch.zeros_like(expected[0]))
    torch.testing.assert_close(t.output, expected)
    ref_out = reference_attention(q, k, v, mask)
    assert max_err(t.output, ref_out) < 1e-5


def test_float_mask_all_neg_inf_row_gives_zeros(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(8)
    q, k, v = randn(gen, 4, 8, device=device), randn(gen, 5, 8, device=device), randn(gen, 5, 3, device=device)
    mask = torch.zeros(4, 5, device=device)
    mask[2] = NEG_INF
    out = dot_product_attention(q, k, v, mask)
    assert torch.equal(out[2], torch.zeros(3, device=device))
    assert torch.isfinite(out).all()
    expected = F.scaled_dot_product_attention(q, k, v, mask)  # torch 2.13 CPU: zeros too
    torch.testing.assert_close(out, expected)


# ---------------------------------------------------------------- stable softmax


def test_stable_softmax_does_not_overflow() -> None:
    x = torch.tensor([[1000.0, 1000.0], [-1000.0, 0.0], [NEG_INF, NEG_INF], [3.0, NEG_INF]])
    w = stable_softmax(x)
    expected = torch.tensor([[0.5, 0.5], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    torch.testing.assert_close(w, expected)


def test_stable_softmax_matches_torch_on_finite_rows() -> None:
    x = torch.randn(4, 7, 5, generator=torch.Generator().manual_seed(9)) * 20
    for dim in (-1, 0, 1):
        torch.testing.assert_close(stable_softmax(x, dim=dim), torch.softmax(x, dim=dim))


@pytest.mark.parametrize(
    "x, match",
    [
        (torch.tensor([1.0, float("nan")]), "NaN or \\+inf"),
        (torch.tensor([1.0, float("inf")]), "NaN or \\+inf"),
        (torch.tensor([1, 2]), "floating dtype"),
        ([1.0, 2.0], "torch.Tensor"),
    ],
)
def test_stable_softmax_rejects(x: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        stable_softmax(x)  # type: ignore[arg-type]
