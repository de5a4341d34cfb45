"""The tiled online-softmax kernel against torch's SDPA, the traced path and a float64 reference."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from attention_checks import tile_cases
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.overrides import TorchFunctionMode

from attention_core import (
    causal_mask,
    dot_product_attention,
    flash_rule,
    padding_mask,
    tiled_attention,
    tiled_extra_bytes,
)
from attention_core.bench import BenchConfig, score_matrix_bytes, textbook_extra_bytes


def _qkv(shape_q, shape_k, d_v, *, device, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*shape_q, generator=gen).to(device=device, dtype=dtype)
    k = torch.randn(*shape_k, generator=gen).to(device=device, dtype=dtype)
    v = torch.randn(*shape_k[:-1], d_v, generator=gen).to(device=device, dtype=dtype)
    return q, k, v


def _err(x: torch.Tensor, ref: torch.Tensor) -> float:
    return float((x.double() - ref).abs().max())


def _agrees(out: torch.Tensor, q, k, v, attn_mask=None, is_causal=False, scale=None) -> None:
    """FlashAttention's rule on every device; on the CPU also within 1e-5 of torch's SDPA (measured here).

    A fixed 1e-5 is a CPU fact, not a law: on a GPU the fused kernels and cuBLAS sum in other orders,
    so there the rule (error vs float64 ≤ 2 × textbook attention's, same dtype, same device) decides.
    """
    check = flash_rule(out, q, k, v, attn_mask, is_causal, scale=scale)
    assert check.passes, check.describe()
    if q.device.type == "cpu" and q.dtype == torch.float32:
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask, 0.0, is_causal, scale=scale)
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n_q", "n_k"), [(64, 64), (100, 37), (37, 100), (1, 9), (300, 300)])
@pytest.mark.parametrize("block_size", [1, 16, 64, 256])
def test_equals_sdpa_and_passes_the_acceptance_rule(device, n_q, n_k, causal, block_size):
    if block_size == 1 and n_q * n_k > 5000:
        pytest.skip("block 1 on large inputs is slow and adds nothing")
    q, k, v = _qkv((2, 3, n_q, 16), (2, 3, n_k, 16), 8, device=device)
    out = tiled_attention(q, k, v, is_causal=causal, block_size=block_size)
    assert out.shape == (2, 3, n_q, 8) and out.dtype == torch.float32
    _agrees(out, q, k, v, is_causal=causal)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
def test_16_bit_inputs_pass_the_acceptance_rule(device, dtype, causal):
    q, k, v = _qkv((1, 4, 200, 32), (1, 4, 200, 32), 32, device=device, dtype=dtype, seed=3)
    out = tiled_attention(q, k, v, is_causal=causal, block_size=64)
    assert out.dtype == dtype
    _agrees(out, q, k, v, is_causal=causal)


def test_bool_padding_mask_and_fully_masked_rows_give_zeros(device):
    q, k, v = _qkv((3, 2, 50, 8), (3, 2, 70, 8), 8, device=device, seed=4)
    mask = padding_mask([70, 0, 33], 70, device=device).unsqueeze(1)  # (3, 1, 1, 70): batch 1 sees no key
    out = tiled_attention(q, k, v, attn_mask=mask, block_size=16)
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    _agrees(out, q, k, v, mask)


def test_float_mask_with_blocked_entries_matches_the_explained_path(device):
    q, k, v = _qkv((2, 40, 8), (2, 45, 8), 5, device=device, seed=5)
    gen = torch.Generator().manual_seed(6)
    mask = torch.randn(40, 45, generator=gen).to(device)
    mask[3] = float("-inf")  # one row blocked entirely
    mask[:, 10:20] = float("-inf")
    out = tiled_attention(q, k, v, attn_mask=mask, block_size=8)
    assert torch.equal(out[:, 3], torch.zeros_like(out[:, 3]))
    check = flash_rule(out, q, k, v, mask)  # torch's SDPA gives NaN on the blocked row; the rule's reference 0
    assert check.passes, check.describe()
    if device.type == "cpu":
        expected = dot_product_attention(q, k, v, attn_mask=mask)
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_a_general_bool_mask_equals_torch(device):
    q, k, v = _qkv((2, 4, 33, 16), (2, 4, 47, 16), 16, device=device, seed=7)
    gen = torch.Generator().manual_seed(8)
    mask = (torch.rand(2, 1, 33, 47, generator=gen) > 0.3).to(device)
    mask[..., 0] = True  # torch's reference would give NaN for an empty row
    _agrees(tiled_attention(q, k, v, attn_mask=mask, block_size=10), q, k, v, mask)


def test_causal_equals_an_explicit_causal_mask(device):
    q, k, v = _qkv((1, 2, 90, 8), (1, 2, 60, 8), 8, device=device, seed=9)
    explicit = tiled_attention(q, k, v, attn_mask=causal_mask(90, 60, device=device), block_size=32)
    torch.testing.assert_close(tiled_attention(q, k, v, is_causal=True, block_size=32), explicit)


def test_leading_dims_broadcast_like_torch(device):
    q, k, v = _qkv((2, 3, 20, 8), (1, 3, 25, 8), 8, device=device, seed=10)
    _agrees(tiled_attention(q, k, v, block_size=7), q, k, v)


def test_custom_scale(device):
    q, k, v = _qkv((1, 30, 8), (1, 30, 8), 8, device=device, seed=11)
    _agrees(tiled_attention(q, k, v, scale=0.7, block_size=8), q, k, v, scale=0.7)


class _CountMatmuls(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("matmul", "__matmul__"):  # `a @ b` arrives as Tensor.matmul
            self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(("n", "block", "tiles"), [(64, 16, 4 * 5 // 2), (60, 16, 4 * 5 // 2), (32, 32, 1)])
def test_causal_skips_the_tiles_above_the_diagonal(n, block, tiles):
    q, k, v = _qkv((1, n, 8), (1, n, 8), 8, device="cpu")
    with _CountMatmuls() as causal:
        tiled_attention(q, k, v, is_causal=True, block_size=block)
    with _CountMatmuls() as full:
        tiled_attention(q, k, v, block_size=block)
    blocks = -(-n // block)
    assert full.count == 2 * blocks * blocks  # q·kᵀ and p·v per tile
    assert causal.count == 2 * tiles  # only the tiles on or below the diagonal


@settings(max_examples=40, deadline=None)
@given(**tile_cases(max_n=40, max_e=9, max_block=17))
def test_any_shape_and_block_size_matches_the_explained_path(n_q, n_k, e, ev, block, causal, seed):
    q, k, v = _qkv((2, n_q, e), (2, n_k, e), ev, device="cpu", seed=seed)
    out = tiled_attention(q, k, v, is_causal=causal, block_size=block)
    torch.testing.assert_close(
        out, dot_product_attention(q, k, v, is_causal=causal), atol=2e-6, rtol=2e-5
    )


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 30), cut=st.integers(0, 29), block=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_changing_a_future_token_never_changes_a_past_output(n, cut, block, seed):
    cut = cut % (n - 1)
    q, k, v = _qkv((1, n, 4), (1, n, 4), 4, device="cpu", seed=seed)
    before = tiled_attention(q, k, v, is_causal=True, block_size=block)
    k2, v2 = k.clone(), v.clone()
    k2[:, cut + 1 :] += 3.0
    v2[:, cut + 1 :] -= 2.0
    after = tiled_attention(q, k2, v2, is_causal=True, block_size=block)
    torch.testing.assert_close(after[:, : cut + 1], before[:, : cut + 1], atol=0.0, rtol=0.0)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"dropout_p": 0.1}, "dropout"),
        ({"block_size": 0}, "block_size"),
        ({"block_size": 2.5}, "block_size"),
        ({"is_causal": True, "attn_mask": torch.ones(4, 4, dtype=torch.bool)}, "not both"),
        ({"scale": float("inf")}, "scale"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, words):
    q, k, v = _qkv((1, 4, 8), (1, 4, 8), 8, device="cpu")
    with pytest.raises(ValueError, match=words):
        tiled_attention(q, k, v, **kwargs)


def test_bad_shapes_raise_value_error():
    q, k, v = _qkv((1, 4, 8), (1, 5, 7), 8, device="cpu")
    with pytest.raises(ValueError, match="feature size"):
        tiled_attention(q, k, v)
    q, k, v = _qkv((1, 4, 8), (1, 5, 8), 8, device="cpu")
    with pytest.raises(ValueError, match="finite"):
        tiled_attention(torch.full_like(q, float("nan")), k, v)


def test_extra_memory_grows_as_n_not_n_squared():
    def extra(n: int) -> int:
        return tiled_extra_bytes(n, n, 64, itemsize=4, batch_heads=8)

    # Linear once n exceeds the block: each doubling adds twice what the previous one added.
    assert extra(16384) - extra(8192) == 2 * (extra(8192) - extra(4096)) > 0
    assert extra(4096) < score_matrix_bytes(4096, "float32", heads=8) / 40  # one n×n matrix is already 40× more
    assert extra(4096) < textbook_extra_bytes(BenchConfig("textbook", 4096, d=64, heads=8)) / 50
    with pytest.raises(ValueError, match="itemsize"):
        tiled_extra_bytes(16, 16, 8, itemsize=0)


def test_inputs_that_need_gradients_get_them_from_the_tiled_backward():
    """Once forward-only (a ValueError); now an autograd node (tests/test_tiled_backward.py checks it in depth)."""
    q, k, v = _qkv((1, 8, 4), (1, 8, 4), 4, device="cpu")
    tiled_attention(q.requires_grad_(), k, v, block_size=3).sum().backward()
    (expected,) = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v).sum(), q)
    torch.testing.assert_close(q.grad, expected, atol=1e-6, rtol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(tiled_attention(q, k, v), dot_product_attention(q, k, v))


# ---- the block size per device -------------------------------------------------------------


def test_the_cpu_keeps_its_block_and_a_gpu_gets_a_large_bounded_one():
    from attention_core.tiled import CUDA_MAX_BLOCK, CUDA_TILE_BUDGET_BYTES, DEFAULT_BLOCK_SIZE, pick_block_size

    assert pick_block_size("cpu", 16384, 16384, batch_heads=16, itemsize=2) == DEFAULT_BLOCK_SIZE == 256
    # the H100 case: n = 16384, fp16, 16 heads: a 4096 tile holds 1 GiB of float32 scores, just fits
    block = pick_block_size(torch.device("cuda"), 16384, 16384, batch_heads=16, itemsize=2)
    assert block == 4096
    assert 16 * block * block * 4 <= CUDA_TILE_BUDGET_BYTES
    assert pick_block_size("cuda", 16384, 16384, batch_heads=32, itemsize=2) == 2048
    assert pick_block_size("cuda", 16384, 16384, batch_heads=1, itemsize=4) == CUDA_MAX_BLOCK
    assert pick_block_size("cuda", 1 << 20, 1 << 20, batch_heads=1024, itemsize=4) == 512  # never below 512
    # short sequences: the tile is min(block, n), so the budget is judged on that
    assert pick_block_size("cuda", 1024, 1024, batch_heads=64, itemsize=2) == CUDA_MAX_BLOCK
    # at most (n / block)² tiles: tens, not thousands, at the size
    assert (16384 // block) ** 2 == 16


def test_the_memory_model_uses_the_block_the_kernel_picks():
    from attention_core.tiled import pick_block_size

    gpu = tiled_extra_bytes(16384, 16384, 64, itemsize=2, batch_heads=16, device="cuda")
    block = pick_block_size("cuda", 16384, 16384, batch_heads=16, itemsize=2)
    assert gpu == tiled_extra_bytes(16384, 16384, 64, itemsize=2, batch_heads=16, block_size=block)
    cpu = tiled_extra_bytes(4096, 4096, 64, itemsize=4)
    assert cpu == tiled_extra_bytes(4096, 4096, 64, itemsize=4, block_size=256)


def test_the_default_block_follows_the_inputs_device(device):
    """block_size=None is the device's block: the same numbers as asking for that block explicitly."""
    from attention_core.tiled import pick_block_size

    q, k, v = _qkv((2, 3, 600, 16), (2, 3, 600, 16), 16, device=device)
    block = pick_block_size(device, 600, 600, batch_heads=6, itemsize=4)
    torch.testing.assert_close(tiled_attention(q, k, v), tiled_attention(q, k, v, block_size=block), rtol=0, atol=0)
    check = flash_rule(tiled_attention(q, k, v), q, k, v)
    assert check.passes, check.describe()
