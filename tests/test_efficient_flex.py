"""FlexAttention: our block masks against torch's own create_block_mask, the caches, and the compiled
kernel against the dense path (compiled once for the whole file: torch.compile takes seconds)."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention.flex_attention import create_block_mask

from attention_core.efficient import (
    and_masks,
    bigbird,
    causal,
    compiled_keys,
    dilated_window,
    flex_available,
    flex_block_mask,
    masked_attention,
    or_masks,
    random_qkv,
    sliding_window,
    window_with_globals,
)
from attention_core.efficient import flex as flex_module
from attention_core.textbook import reference_attention


@pytest.mark.parametrize("n_q,n_k", [(300, 300), (128, 128), (256, 100), (77, 390)])
@pytest.mark.parametrize(
    "pattern",
    [
        sliding_window(40),
        window_with_globals(20, 5),
        dilated_window(8, 20),
        and_masks(sliding_window(100), causal()),
        bigbird(1, 1, 2, 32, seed=0, n=390),
    ],
    ids=["window", "globals", "dilated", "causal-window", "bigbird"],
)
def test_block_mask_equals_torchs_create_block_mask(pattern, n_q, n_k):
    ours = flex_block_mask(pattern, n_q, n_k).block_mask
    theirs = create_block_mask(pattern, None, None, n_q, n_k, device="cpu")
    assert torch.equal(ours.to_dense(), theirs.to_dense())
    assert torch.equal(ours.kv_num_blocks, theirs.kv_num_blocks)
    assert torch.equal(ours.full_kv_num_blocks, theirs.full_kv_num_blocks)
    assert ours.seq_lengths == theirs.seq_lengths


def test_block_masks_are_cached_and_the_cache_is_bounded():
    first = flex_block_mask(sliding_window(11), 500, 500)
    assert flex_block_mask(sliding_window(11), 500, 500) is first
    for w in range(1, flex_module.BLOCK_MASK_CACHE + 2):
        flex_block_mask(sliding_window(1000 + w), 130, 130)
    assert flex_module._block_mask.cache_info().currsize == flex_module.BLOCK_MASK_CACHE
    assert flex_block_mask(sliding_window(11), 500, 500) is not first  # the oldest went first


def test_a_new_window_is_the_same_compile_key_a_new_kind_is_not():
    key = flex_module._structure
    assert key(sliding_window(3)) == key(sliding_window(900))
    assert key(bigbird(1, 1, 1, 16, seed=0, n=64)) == key(bigbird(2, 0, 3, 32, seed=5, n=512))
    assert key(sliding_window(3)) != key(causal())
    assert key(and_masks(sliding_window(3), causal())) != key(and_masks(causal(), sliding_window(3)))
    assert key(and_masks(sliding_window(3), causal())) == key(and_masks(sliding_window(7), causal()))
    assert key(and_masks(sliding_window(3), causal())) != key(or_masks(sliding_window(3), causal()))


@pytest.mark.slow
@pytest.mark.skipif(flex_available("cpu") is not None, reason="torch.compile cannot run here")
def test_compiled_flex_equals_the_dense_path_and_compiles_once():
    q, k, v = random_qkv(200, 16, heads=2, seed=7)
    exact = reference_attention(q, k, v)

    # A window of at least n is exact attention: the first call compiles (unless another test did).
    first = masked_attention(q, k, v, sliding_window(250), backend="flex")
    assert first.backend == "flex" and first.fallback is None and first.plan.compile_s > 0
    torch.testing.assert_close(first.output.double(), exact, atol=1e-5, rtol=1e-5)
    keys = compiled_keys()

    # A narrower window, another n, fewer keys than queries: the same compiled kernel, no recompile.
    for n_q, n_k, window in ((200, 200, 16), (77, 77, 5), (300, 40, 20)):
        q, k, v = random_qkv(n_q, 16, heads=2, seed=n_q, n_k=n_k)
        flex = masked_attention(q, k, v, sliding_window(window), backend="flex")
        dense = masked_attention(q, k, v, sliding_window(window), backend="dense")
        assert flex.backend == "flex" and not flex.plan.compiled_now and flex.plan.compile_s == first.plan.compile_s
        assert float((flex.output - dense.output).abs().max()) <= 1e-5
        assert not bool(flex.output.isnan().any())  # n_k = 40 leaves queries 60… with no key: zeros
    assert bool((flex.output[..., 60:, :] == 0).all())
    assert compiled_keys() == keys
