"""Low rank: Linformer's projection (exact with the identity, as it must be) and the singular-value
spectrum of attention, including the trained model's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention_core.efficient import error_curve, lowrank, random_qkv
from attention_core.textbook import reference_attention


def test_rank_n_with_the_identity_projection_is_exact_attention(device):
    q, k, v = random_qkv(40, 8, heads=2, seed=1, device=device)
    identity = torch.eye(40, device=device)
    out = lowrank.linformer_attention(q, k, v, projection=(identity, identity))
    torch.testing.assert_close(out.double(), reference_attention(q, k, v), atol=2e-6, rtol=0)


def test_pooling_at_rank_n_is_the_identity_and_averages_below():
    e, f = lowrank.linformer_projections(10, 10, kind="pool")
    assert torch.equal(e, torch.eye(10)) and e is f
    e, _ = lowrank.linformer_projections(3, 10, kind="pool")
    torch.testing.assert_close(e.sum(-1), torch.ones(3))
    assert [int((row > 0).sum()) for row in e] == [3, 3, 4]  # runs of consecutive tokens cover all 10


def test_gaussian_projections_are_seeded_and_scaled_for_johnson_lindenstrauss():
    e, f = lowrank.linformer_projections(64, 2000, seed=3)
    again, _ = lowrank.linformer_projections(64, 2000, seed=3)
    assert torch.equal(e, again) and not torch.equal(e, f)
    assert float(e.var()) == pytest.approx(1 / 64, rel=0.02)


def test_the_output_is_softmax_over_projected_keys_times_projected_values():
    q, k, v = random_qkv(30, 8, heads=2, seed=2)
    e, f = lowrank.linformer_projections(6, 30, seed=4)
    expected = reference_attention(q, e @ k, f @ v)
    out = lowrank.linformer_attention(q, k, v, projection=(e, f))
    torch.testing.assert_close(out.double(), expected, atol=2e-6, rtol=0)
    torch.testing.assert_close(lowrank.linformer_attention(q, k, v, rank=6, seed=4), out)


def test_pooled_error_falls_to_zero_at_rank_n():
    curve = error_curve("linformer", [8, 32, 64], n=64, d=16, heads=2, seeds=(0, 1), kind="pool")
    assert curve.mean[0] > curve.mean[1] > curve.mean[2] and curve.mean[2] < 1e-5


def test_bad_arguments_say_what_was_expected():
    q, k, v = random_qkv(12, 4, seed=5)
    for rank in (0, -2):
        with pytest.raises(ValueError, match="rank must be ≥ 1"):
            lowrank.linformer_attention(q, k, v, rank=rank)
    with pytest.raises(ValueError, match="rank must be ≤ 12"):
        lowrank.linformer_attention(q, k, v, rank=13)
    with pytest.raises(ValueError, match="give rank"):
        lowrank.linformer_attention(q, k, v)
    with pytest.raises(ValueError, match=r"projection E must be \(rank, S=12\)"):
        lowrank.linformer_attention(q, k, v, projection=(torch.eye(5), torch.eye(5)))
    with pytest.raises(ValueError, match="kind must be one of"):
        lowrank.linformer_attention(q, k, v, rank=4, kind="learned")


def test_spectrum_equals_numpy_and_energy_shares_add_up():
    gen = torch.Generator().manual_seed(0)
    w = torch.softmax(torch.randn(3, 20, 20, generator=gen), dim=-1)
    spectrum = lowrank.attention_spectrum(w)
    expected = np.linalg.svd(w.double().numpy(), compute_uv=False)
    np.testing.assert_allclose(spectrum.singular_values.numpy(), expected, rtol=1e-10)
    energy = spectrum.energy
    assert bool((energy.diff(dim=-1) >= -1e-15).all()) and torch.allclose(energy[..., -1], torch.ones(3).double())
    sq = torch.tensor(expected) ** 2
    torch.testing.assert_close(energy[..., 3], sq[..., :4].sum(-1) / sq.sum(-1))


def test_rank_one_and_identity_matrices():
    ones = torch.full((8, 8), 1 / 8)  # uniform attention: rank 1
    assert float(lowrank.attention_spectrum(ones).energy[0]) == pytest.approx(1.0)
    eye = torch.eye(8)  # each token on itself: energy spread evenly
    assert float(lowrank.attention_spectrum(eye).energy[1]) == pytest.approx(2 / 8)


def test_trained_attention_is_closer_to_low_rank_than_random_weights():
    from attention_core.bert import load_bert, sentence_weights

    tokens, w = sentence_weights(load_bert(), "The animal didn't cross the street because it was too tired.")
    n = len(tokens)
    trained = lowrank.attention_spectrum(w).energy[..., 2].mean()  # every layer and head, (6, 12)
    gen = torch.Generator().manual_seed(0)
    random_weights = torch.softmax(torch.randn(72, n, n, generator=gen), dim=-1)
    random = lowrank.attention_spectrum(random_weights).energy[..., 2].mean()
    assert float(trained) > float(random)
