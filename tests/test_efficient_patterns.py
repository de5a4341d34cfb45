"""Sparse patterns: each builder against a mask written out by hand, the tile summary against the
dense mask, BigBird's blocks, and the checks."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core.efficient import patterns

PROPS = settings(max_examples=40, deadline=None)


def _by_hand(n_q: int, n_k: int, allowed) -> torch.Tensor:
    """A reference mask from a Python predicate, one entry at a time."""
    return torch.tensor([[bool(allowed(i, j)) for j in range(n_k)] for i in range(n_q)])


@PROPS
@given(n_q=st.integers(1, 40), n_k=st.integers(1, 40), window=st.integers(1, 45))
def test_sliding_window_is_the_band(n_q, n_k, window):
    expected = _by_hand(n_q, n_k, lambda i, j: abs(i - j) <= window)
    assert torch.equal(patterns.dense_mask(patterns.sliding_window(window), n_q, n_k), expected)


@PROPS
@given(n=st.integers(1, 40), window=st.integers(1, 10), n_global=st.integers(0, 6))
def test_globals_see_and_are_seen_by_all(n, window, n_global):
    expected = _by_hand(n, n, lambda i, j: abs(i - j) <= window or i < n_global or j < n_global)
    assert torch.equal(patterns.dense_mask(patterns.window_with_globals(window, n_global), n, n), expected)


@PROPS
@given(n=st.integers(1, 50), window=st.integers(1, 6), dilation=st.integers(1, 5))
def test_dilated_window_keeps_every_dilation_th_key(n, window, dilation):
    expected = _by_hand(n, n, lambda i, j: abs(i - j) <= window * dilation and (i - j) % dilation == 0)
    assert torch.equal(patterns.dense_mask(patterns.dilated_window(window, dilation), n, n), expected)


def test_dilation_one_is_the_sliding_window():
    dilated = patterns.dense_mask(patterns.dilated_window(7, 1), 60, 60)
    assert torch.equal(dilated, patterns.dense_mask(patterns.sliding_window(7), 60, 60))


def test_causal_is_top_left_aligned_like_is_causal():
    for n_q, n_k in ((5, 5), (3, 7), (7, 3)):
        expected = torch.ones(n_q, n_k, dtype=torch.bool).tril()  # torch's is_causal convention
        assert torch.equal(patterns.dense_mask(patterns.causal(), n_q, n_k), expected)


def test_and_or_combine_elementwise():
    a, b = patterns.sliding_window(3), patterns.causal()
    da, db = patterns.dense_mask(a, 20, 20), patterns.dense_mask(b, 20, 20)
    assert torch.equal(patterns.dense_mask(patterns.and_masks(a, b), 20, 20), da & db)
    assert torch.equal(patterns.dense_mask(patterns.or_masks(a, b), 20, 20), da | db)


def test_builders_return_the_same_function_for_the_same_arguments():
    assert patterns.sliding_window(5) is patterns.sliding_window(5)
    assert patterns.sliding_window(5) is not patterns.sliding_window(6)
    causal_window = patterns.and_masks(patterns.sliding_window(5), patterns.causal())
    assert causal_window is patterns.and_masks(patterns.sliding_window(5), patterns.causal())


def test_bigbird_blocks_window_globals_and_random():
    n, block, window, n_global, n_random = 512, 32, 1, 2, 3
    mask = patterns.dense_mask(patterns.bigbird(window, n_global, n_random, block, seed=0, n=n), n, n)
    blocks = n // block
    tiles = mask.view(blocks, block, blocks, block)
    per_tile = tiles.any(dim=3).any(dim=1)  # (blocks, blocks)
    assert torch.equal(per_tile, tiles.all(dim=3).all(dim=1))  # every block is all in or all out
    i = torch.arange(blocks)
    band = (i[:, None] - i[None, :]).abs() <= window
    glob = (i[:, None] < n_global) | (i[None, :] < n_global)
    assert bool(per_tile[band | glob].all())
    extra = (per_tile & ~band & ~glob).sum(dim=1)  # random blocks per query block
    assert torch.equal(extra[n_global:], torch.full((blocks - n_global,), n_random))


def test_bigbird_is_deterministic_in_its_seed():
    one = patterns.dense_mask(patterns.bigbird(1, 1, 2, 16, seed=3, n=256), 256, 256)
    again = patterns.dense_mask(patterns.bigbird(1, 1, 2, 16, seed=3, n=256), 256, 256)
    other = patterns.dense_mask(patterns.bigbird(1, 1, 2, 16, seed=4, n=256), 256, 256)
    assert torch.equal(one, again) and not torch.equal(one, other)


def test_bigbird_random_blocks_hold_real_keys():
    n, block = 100, 16  # 7 blocks of real keys, padded length 128 = 8 blocks
    mask = patterns.dense_mask(patterns.bigbird(1, 0, 4, block, seed=0, n=n), n, n)
    assert bool(mask.any(dim=1).all())
    assert int(mask.sum(dim=1).max()) <= n


@pytest.mark.parametrize("block", [0, -4, 48, 100])
def test_bigbird_block_must_divide_the_padded_length(block):
    with pytest.raises(ValueError, match="block"):
        patterns.bigbird(1, 1, 1, block, seed=0, n=4096)


def test_bigbird_refuses_a_longer_sequence_than_it_was_built_for():
    pattern = patterns.bigbird(1, 1, 1, 32, seed=0, n=200)  # padded length 256
    patterns.dense_mask(pattern, 256, 256)
    with pytest.raises(ValueError, match="up to 256 tokens"):
        patterns.dense_mask(pattern, 300, 300)
    with pytest.raises(ValueError, match="up to 256 tokens"):
        patterns.block_summary(patterns.and_masks(pattern, patterns.causal()), 300, 300)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: patterns.sliding_window(0), "window must be ≥ 1"),
        (lambda: patterns.sliding_window(-3), "window must be ≥ 1"),
        (lambda: patterns.sliding_window(2.5), "window must be an integer"),
        (lambda: patterns.sliding_window(True), "window must be an integer"),
        (lambda: patterns.sliding_window([3]), "window must be an integer"),
        (lambda: patterns.window_with_globals(4, -1), "n_global must be ≥ 0"),
        (lambda: patterns.dilated_window(4, 0), "dilation must be ≥ 1"),
        (lambda: patterns.bigbird(0, 1, 1, 16, seed=0, n=64), "window must be ≥ 1"),
        (lambda: patterns.bigbird(1, 1, -1, 16, seed=0, n=64), "n_random must be ≥ 0"),
        (lambda: patterns.and_masks(), "at least one"),
        (lambda: patterns.or_masks(patterns.sliding_window(2), 3), "mask function"),
    ],
)
def test_bad_parameters_say_what_was_expected(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_dense_mask_checks_sizes_and_the_function():
    with pytest.raises(ValueError, match="n_q must be ≥ 1"):
        patterns.dense_mask(patterns.causal(), 0, 4)
    with pytest.raises(ValueError, match="bool tensor"):
        patterns.dense_mask(lambda b, h, q, k: q - k, 4, 4)
    with pytest.raises(ValueError, match="mask_mod must be a function"):
        patterns.dense_mask("causal", 4, 4)


def test_dense_mask_lands_on_the_device_asked_for(device):
    mask = patterns.dense_mask(patterns.sliding_window(2), 9, 9, device=device)
    assert mask.device.type == device.type and mask.dtype == torch.bool


def test_dense_mask_is_filled_band_by_band():
    n = 3000  # more than one band of rows (4M entries each)
    mask = patterns.dense_mask(patterns.sliding_window(5), n, n)
    assert int(mask.sum()) == sum(min(i + 5, n - 1) - max(i - 5, 0) + 1 for i in range(n))


def _tiles_from_dense(mask: torch.Tensor, block: int) -> torch.Tensor:
    n_q, n_k = mask.shape
    states = torch.empty(math.ceil(n_q / block), math.ceil(n_k / block), dtype=torch.int8)
    for a in range(states.shape[0]):
        for b in range(states.shape[1]):
            tile = mask[a * block : (a + 1) * block, b * block : (b + 1) * block]
            states[a, b] = (
                patterns.FULL if bool(tile.all()) else patterns.PARTIAL if bool(tile.any()) else patterns.EMPTY
            )
    return states


@PROPS
@given(
    n_q=st.integers(1, 90),
    n_k=st.integers(1, 90),
    block=st.sampled_from([4, 16, 32, 128]),
    window=st.integers(1, 30),
    n_global=st.integers(0, 3),
)
def test_block_summary_matches_the_dense_mask_tile_by_tile(n_q, n_k, block, window, n_global):
    pattern = patterns.window_with_globals(window, n_global)
    mask = patterns.dense_mask(pattern, n_q, n_k)
    summary = patterns.block_summary(pattern, n_q, n_k, block=block)
    assert torch.equal(summary.states, _tiles_from_dense(mask, block))
    assert summary.allowed_share == int(mask.sum()) / mask.numel()
    assert sum(summary.share(state) for state in (patterns.EMPTY, patterns.PARTIAL, patterns.FULL)) == pytest.approx(1)


def test_block_summary_of_a_window_256_at_4096_skips_85_percent():
    # the probe: 85 % of the blocks skipped
    summary = patterns.block_summary(patterns.sliding_window(256), 4096, 4096)
    expected_empty = sum(1 for a in range(32) for b in range(32) if abs(a - b) >= 3)  # tiles 3 or more apart are empty
    assert summary.share(patterns.EMPTY) == pytest.approx(expected_empty / 1024)
    assert summary.allowed_share == pytest.approx((4096 * 513 - 256 * 257) / 4096**2)
