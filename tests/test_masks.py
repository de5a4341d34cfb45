"""Masks: causal (top-left, as torch's is_causal), padding, their `&`, and the additive form."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from attention_core import causal_mask, dot_product_attention, padding_mask

SHAPES = [(1, 1), (1, 5), (5, 1), (4, 4), (3, 7), (7, 3), (16, 16)]


@pytest.mark.parametrize("n_q, n_k", SHAPES)
def test_causal_mask_is_lower_triangle(n_q: int, n_k: int, device: torch.device) -> None:
    mask = causal_mask(n_q, n_k, device=device)
    assert mask.dtype == torch.bool
    assert mask.shape == (n_q, n_k)
    assert mask.device.type == device.type
    assert torch.equal(mask.cpu(), torch.ones(n_q, n_k, dtype=torch.bool).tril())
    for i in range(n_q):  # spelled out: query i sees keys 0..i, counted from the top-left corner
        assert mask[i].cpu().tolist() == [j <= i for j in range(n_k)]


@pytest.mark.parametrize("n_q, n_k", [(3, 7), (7, 3), (5, 5)])
def test_causal_mask_matches_torch_is_causal(n_q: int, n_k: int, device: torch.device) -> None:
    gen = torch.Generator().manual_seed(n_q * 10 + n_k)
    q = torch.randn(2, n_q, 4, generator=gen).to(device)
    k = torch.randn(2, n_k, 4, generator=gen).to(device)
    v = torch.randn(2, n_k, 3, generator=gen).to(device)
    mask = causal_mask(n_q, n_k, device=device)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(F.scaled_dot_product_attention(q, k, v, mask), expected)
    torch.testing.assert_close(dot_product_attention(q, k, v, mask), expected)
    torch.testing.assert_close(dot_product_attention(q, k, v, is_causal=True), expected)


def test_padding_mask_values_and_shape(device: torch.device) -> None:
    lengths = [3, 0, 5, 1]
    mask = padding_mask(lengths, 5, device=device)
    assert mask.dtype == torch.bool
    assert mask.shape == (4, 1, 5)
    expected = [[[j < n for j in range(5)]] for n in lengths]
    assert mask.cpu().tolist() == expected


def test_padding_mask_accepts_an_integer_tensor(device: torch.device) -> None:
    mask = padding_mask(torch.tensor([2, 4]), 4, device=device)
    assert torch.equal(mask.cpu(), padding_mask([2, 4], 4))


def test_padding_mask_broadcasts_over_queries_and_combines_with_causal(device: torch.device) -> None:
    lengths, n_q, n_k = [2, 4, 0], 4, 4
    pad = padding_mask(lengths, n_k, device=device)  # (3, 1, 4)
    both = pad & causal_mask(n_q, n_k, device=device)  # (3, 4, 4)
    assert both.shape == (3, n_q, n_k)
    for b, n in enumerate(lengths):
        for i in range(n_q):
            assert both[b, i].cpu().tolist() == [j <= i and j < n for j in range(n_k)]
    scores = torch.zeros(3, n_q, n_k, device=device)
    assert torch.broadcast_shapes(pad.shape, scores.shape) == scores.shape
    # with heads: unsqueeze(1) gives (B, 1, 1, S) for (B, nh, L, S) scores
    assert torch.broadcast_shapes(pad.unsqueeze(1).shape, (3, 2, n_q, n_k)) == (3, 2, n_q, n_k)


def test_combined_mask_in_attention_matches_torch(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(21)
    q, k, v = (torch.randn(3, 5, 4, generator=gen).to(device) for _ in range(3))
    mask = padding_mask([5, 2, 0], 5, device=device) & causal_mask(5, 5, device=device)
    ours = dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(ours, F.scaled_dot_product_attention(q, k, v, mask))
    assert torch.equal(ours[2], torch.zeros_like(ours[2]))  # no real key: zero output


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: causal_mask(0, 3), "n_q must be ≥ 1"),
        (lambda: causal_mask(3, -1), "n_k must be ≥ 1"),
        (lambda: causal_mask(2.5, 3), "n_q must be an integer"),
        (lambda: causal_mask(True, 3), "n_q must be an integer"),
        (lambda: causal_mask(1 << 30, 2), "n_q must be ≤"),
        (lambda: causal_mask(2, 2, device="gpu"), "device must be"),
        (lambda: padding_mask([2, 3], 0), "n_k must be ≥ 1"),
        (lambda: padding_mask([2, -1], 3), "lengths\\[1\\] must be ≥ 0"),
        (lambda: padding_mask([2, 4], 3), "lengths\\[1\\] must be ≤ 3"),
        (lambda: padding_mask([], 3), "non-empty sequence"),
        (lambda: padding_mask("12", 3), "non-empty sequence"),
        (lambda: padding_mask(3, 3), "non-empty sequence"),
        (lambda: padding_mask([1.5], 3), "lengths\\[0\\] must be an integer"),
        (lambda: padding_mask(torch.tensor([1.0, 2.0]), 3), "1-D integer tensor"),
        (lambda: padding_mask(torch.tensor([[1, 2]]), 3), "1-D integer tensor"),
        (lambda: padding_mask(torch.tensor([True]), 3), "1-D integer tensor"),
    ],
)
def test_mask_errors(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()
