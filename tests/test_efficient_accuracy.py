"""Accuracy measures: relative error, per-row KL (against numbers worked out by hand and against a
closed form for sparse patterns), error curves, and every variant's weights against its output."""

from __future__ import annotations

import math

import pytest
import torch

from attention_core.attention import attention_trace
from attention_core.efficient import (
    VARIANTS,
    ErrorCurve,
    compare,
    compare_variant,
    random_qkv,
    relative_error,
    row_kl,
    variant_attention,
)


def test_relative_error_by_hand():
    ref = torch.tensor([[3.0, 4.0]])  # norm 5
    assert relative_error(torch.tensor([[3.0, 5.0]]), ref) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="all zeros"):
        relative_error(ref, torch.zeros(1, 2))
    with pytest.raises(ValueError, match="one shape"):
        relative_error(ref, torch.ones(2, 2))


def test_row_kl_by_hand():
    p = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    q = torch.tensor([[0.25, 0.75, 0.0], [0.5, 0.5, 0.0]])
    expected = [0.5 * math.log(2) + 0.5 * math.log(0.5 / 0.75), math.log(2)]
    torch.testing.assert_close(row_kl(p, q), torch.tensor(expected, dtype=torch.float64))
    assert float(row_kl(q, p)[1]) == math.inf  # q weighs a key that p gives 0
    assert float(row_kl(torch.zeros(1, 3), torch.zeros(1, 3))[0]) == 0.0  # a query with no key
    with pytest.raises(ValueError, match="negative"):
        row_kl(torch.tensor([[-0.1, 1.1]]), p[:1, :2])


def test_a_pattern_keeps_minus_log_of_the_exact_weight_it_keeps():
    q, k, v = random_qkv(30, 8, heads=2, seed=1)
    exact = attention_trace(q.double(), k.double(), v.double())
    sparse = variant_attention(q.double(), k.double(), v.double(), "window", window=3).weights
    result = compare(exact.output, exact.output, sparse, exact.weights)
    kept = (exact.weights * (sparse > 0)).sum(-1)  # (1, 2, 30)
    # The pattern's weights are exact ones restricted and renormalised, so KL(pattern ‖ exact) = −log(kept).
    torch.testing.assert_close(result.reverse_kl, -kept.log())
    assert bool(torch.isinf(result.kl).all())  # and the other direction is infinite: keys dropped
    assert result.kept == pytest.approx(float(kept.mean()))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("causal", [False, True])
def test_every_variants_weights_give_its_output(variant, causal):
    if variant == "linformer" and causal:
        with pytest.raises(ValueError, match="no causal form"):
            variant_attention(*random_qkv(8, 4), variant, is_causal=True)
        return
    q, k, v = random_qkv(40, 8, heads=2, seed=2)
    params = {"kind": "pool", "rank": 10} if variant == "linformer" else {"window": 3, "block": 16}
    result = variant_attention(q, k, v, variant, is_causal=causal, **params)
    assert result.weights is not None and result.note is None
    torch.testing.assert_close(result.weights @ v, result.output, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(result.weights.sum(-1), torch.ones(1, 2, 40), atol=1e-5, rtol=0)
    if causal:
        assert bool((result.weights.triu(1) == 0).all())


def test_a_gaussian_linformer_has_no_weights_and_says_why():
    q, k, v = random_qkv(20, 8, seed=3)
    result, _, accuracy = compare_variant(q, k, v, "linformer", rank=5)
    assert result.weights is None and "signed coefficients" in result.note
    assert accuracy.kl is None and accuracy.note == result.note and accuracy.relative_error > 0


def test_a_window_covering_every_key_is_exact():
    q, k, v = random_qkv(24, 8, heads=2, seed=4)
    _, _, accuracy = compare_variant(q, k, v, "window", window=24)
    assert accuracy.relative_error < 1e-6 and float(accuracy.kl.mean()) < 1e-9 and accuracy.kept == pytest.approx(1.0)


def test_error_curve_slope_and_trend():
    x = (16, 64, 256)
    curve = ErrorCurve(x=x, errors=tuple((2 / m**0.5, 2 / m**0.5) for m in x))
    assert curve.slope() == pytest.approx(-0.5)
    assert curve.inverse_sqrt_trend() == pytest.approx(curve.mean)
    assert curve.ratio(16, 256) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="must be sizes measured"):
        curve.ratio(16, 32)


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="variant must be one of"):
        variant_attention(*random_qkv(8, 4), "reformer")
