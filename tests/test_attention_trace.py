"""The traced path's trace: the five steps as formulas, the masks it records, and dropout."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from attention_checks import make_mask, max_err, randn, reference_weights

from attention_core import attention_trace, dot_product_attention, reference_attention


def test_trace_steps_are_the_five_formulas(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(3)
    q, k, v = randn(gen, 2, 4, 6, device=device), randn(gen, 2, 5, 6, device=device), randn(gen, 2, 5, 3, device=device)
    mask = make_mask("bool", (2, 4, 5), gen, device)
    t = attention_trace(q, k, v, mask, scale=0.7)
    q64, k64 = q.cpu().double().numpy(), k.cpu().double().numpy()
    scores = np.einsum("bie,bje->bij", q64, k64)  # (2, 4, 5)
    assert max_err(t.scores, scores) < 1e-5
    assert max_err(t.scaled, 0.7 * scores) < 1e-5
    assert t.scale == 0.7
    assert torch.isneginf(t.masked[~mask]).all()
    torch.testing.assert_close(t.masked[mask], t.scaled[mask])
    ref_w, ref_out = reference_weights(q, k, mask, scale=0.7), reference_attention(q, k, v, mask, scale=0.7)
    assert max_err(t.weights, ref_w) < 1e-6
    assert max_err(t.output, ref_out) < 1e-5
    assert t.mask is mask
    assert t.dropout_p == 0.0 and t.dropout_keep is None and t.dropped is t.weights
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.scale = 1.0  # type: ignore[misc]


def test_trace_float_mask_is_added(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(4)
    q, k, v = (randn(gen, 3, 4, device=device) for _ in range(3))
    mask = make_mask("float", (3, 3), gen, device)
    t = attention_trace(q, k, v, mask)
    torch.testing.assert_close(t.masked, t.scaled + mask)
    assert t.scale == pytest.approx(0.5)  # default 1/√E with E = 4


def test_trace_causal_records_the_causal_mask(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(5)
    q, k, v = randn(gen, 3, 4, device=device), randn(gen, 5, 4, device=device), randn(gen, 5, 4, device=device)
    t = attention_trace(q, k, v, is_causal=True)
    assert t.mask is not None
    assert torch.equal(t.mask.cpu(), torch.ones(3, 5, dtype=torch.bool).tril())
    assert attention_trace(q, k, v).mask is None


# ---------------------------------------------------------------- dropout


def _dropout_inputs(device: torch.device):
    gen = torch.Generator().manual_seed(12)
    q, k, v = randn(gen, 4, 6, device=device), randn(gen, 5, 6, device=device), randn(gen, 5, 3, device=device)
    return q, k, v


def test_dropout_drops_and_rescales(device: torch.device) -> None:
    q, k, v = _dropout_inputs(device)
    p = 0.4
    t = attention_trace(q, k, v, dropout_p=p, generator=torch.Generator(device=device).manual_seed(1))
    assert t.dropout_p == p
    assert t.dropout_keep is not None and t.dropout_keep.dtype == torch.bool
    assert t.dropout_keep.shape == t.weights.shape
    torch.testing.assert_close(t.dropped, t.weights * t.dropout_keep / (1 - p))
    torch.testing.assert_close(t.output, t.dropped @ v)
    clean = attention_trace(q, k, v)
    torch.testing.assert_close(t.weights, clean.weights)  # dropout comes after the softmax
    again = attention_trace(q, k, v, dropout_p=p, generator=torch.Generator(device=device).manual_seed(1))
    assert torch.equal(again.dropout_keep, t.dropout_keep)  # a seed gives the same picture


def test_dropout_keep_rate_and_expectation(device: torch.device) -> None:
    """Over many independent draws, the mean output approaches the dropout-free output."""
    q, k, v = _dropout_inputs(device)
    p, draws = 0.3, 4000
    gen = torch.Generator(device=device).manual_seed(2)
    # a broadcast batch of identical problems: one independent dropout pattern per draw
    t = attention_trace(q.expand(draws, *q.shape), k, v, dropout_p=p, generator=gen)
    assert t.dropout_keep is not None
    n = t.dropout_keep.numel()
    keep_rate = t.dropout_keep.double().mean().item()
    assert abs(keep_rate - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    expected = dot_product_attention(q, k, v).double()  # (4, 3)
    outs = t.output.double()  # (draws, 4, 3)
    standard_error = outs.std(dim=0) / math.sqrt(draws)
    assert ((outs.mean(dim=0) - expected).abs() <= 5 * standard_error + 1e-6).all()
    # and without the 1/(1−p) rescaling the mean would be visibly off: the test can tell
    assert ((outs.mean(dim=0) * (1 - p) - expected).abs() > 5 * standard_error).any()


def test_dropout_zero_means_no_dropout(device: torch.device) -> None:
    q, k, v = _dropout_inputs(device)
    t = attention_trace(q, k, v, dropout_p=0.0, generator=torch.Generator(device=device).manual_seed(3))
    assert t.dropout_keep is None
    assert t.dropped is t.weights


def test_dropout_keeps_fully_masked_rows_at_zero(device: torch.device) -> None:
    q, k, v = _dropout_inputs(device)
    mask = torch.ones(4, 5, dtype=torch.bool, device=device)
    mask[1] = False
    t = attention_trace(q, k, v, mask, dropout_p=0.5, generator=torch.Generator(device=device).manual_seed(4))
    assert torch.equal(t.output[1], torch.zeros(3, device=device))
    assert torch.isfinite(t.output).all()
