"""The tiled kernel's backward (FlashAttention-2, Algorithm 2) against autograd and float64.

Independent references: torch's numerical gradcheck in float64, and float64 autograd through
textbook attention (plain torch ops), judged by FlashAttention's rule on each of dQ, dK and dV.
"""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F
from attention_checks import tile_cases
from hypothesis import given, settings

from attention_core import padding_mask, tiled_attention
from attention_core.accuracy import GradientCheck, attention_grads, gradient_rule
from attention_core.textbook import textbook_attention
from attention_core.tiled import tiled_saved_bytes


def _randn(*shape, gen, device, dtype):
    return torch.randn(*shape, generator=gen, dtype=torch.float64).to(device=device, dtype=dtype)


def _qkv_do(shape_q, shape_k, d_v, *, device="cpu", dtype=torch.float32, seed=0):
    """q, k, v and an upstream gradient dO of the output's (broadcast) shape."""
    gen = torch.Generator().manual_seed(seed)
    q = _randn(*shape_q, gen=gen, device=device, dtype=dtype)
    k = _randn(*shape_k, gen=gen, device=device, dtype=dtype)
    v = _randn(*shape_k[:-1], d_v, gen=gen, device=device, dtype=dtype)
    lead = torch.broadcast_shapes(shape_q[:-2], shape_k[:-2])
    d_out = _randn(*lead, shape_q[-2], d_v, gen=gen, device=device, dtype=dtype)
    return q, k, v, d_out


def _sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask, 0.0, is_causal, scale=scale)


def _assert_flash_rule(block: int, q, k, v, d_out, attn_mask=None, is_causal=False, scale=None) -> GradientCheck:
    """Tiled's dQ, dK, dV within FlashAttention's rule; returns the check.

    float32 gets a second baseline, torch's own fused SDPA backward (the exception explained in
    attention_core/accuracy.py: on nearly one-hot rows both fused backwards' D = rowsum(dO ∘ O)
    leave a few ulps that textbook attention's softmax backward cancels exactly).
    """
    tiled = functools.partial(tiled_attention, block_size=block)
    args = (q, k, v, d_out, attn_mask, is_causal)
    check = gradient_rule(attention_grads(tiled, *args, scale=scale), *args, scale=scale)  # NaN never passes
    if check.passes or q.dtype != torch.float32:
        assert check.passes, check.describe()
        return check
    fused = gradient_rule(attention_grads(_sdpa, *args, scale=scale), *args, scale=scale)
    assert check.passes_beside(fused), f"{check.describe()}; torch SDPA's: {fused.describe()}"
    return check


# ---- gradcheck: the analytic gradients against finite differences, in float64 ----------------

_GRADCHECK_CASES = {
    "n_q<n_k, block divides neither": dict(shape_q=(2, 5, 3), shape_k=(2, 7, 3), d_v=4, block=3),
    "n_q>n_k, causal": dict(shape_q=(1, 2, 7, 3), shape_k=(1, 2, 5, 3), d_v=2, block=2, is_causal=True),
    "n_q<n_k, causal": dict(shape_q=(5, 4), shape_k=(7, 4), d_v=3, block=3, is_causal=True),
    "broadcast batch, custom scale": dict(shape_q=(2, 2, 4, 3), shape_k=(1, 2, 6, 3), d_v=2, block=4, scale=0.7),
    "bool mask, a fully masked row": dict(shape_q=(2, 6, 3), shape_k=(2, 5, 3), d_v=2, block=2, mask="bool"),
    "float mask, a fully blocked row": dict(shape_q=(2, 6, 3), shape_k=(2, 5, 3), d_v=2, block=4, mask="float"),
}


def _gradcheck_mask(kind: str | None, n_q: int, n_k: int, device) -> torch.Tensor | None:
    gen = torch.Generator().manual_seed(1)
    if kind == "bool":
        mask = torch.rand(n_q, n_k, generator=gen) > 0.4
        mask[:, 0] = True
        mask[2] = False  # query 2 sees no key: its output is 0 and so is its gradient
        return mask.to(device)
    if kind == "float":
        mask = torch.randn(n_q, n_k, generator=gen, dtype=torch.float64)
        mask[:, 1] = float("-inf")
        mask[4] = float("-inf")
        return mask.to(device)
    return None


@pytest.mark.parametrize("case", _GRADCHECK_CASES.values(), ids=_GRADCHECK_CASES.keys())
def test_gradcheck_in_float64(device, case):
    q, k, v, _ = _qkv_do(case["shape_q"], case["shape_k"], case["d_v"], device=device, dtype=torch.float64)
    mask = _gradcheck_mask(case.get("mask"), q.shape[-2], k.shape[-2], device)
    causal, scale = case.get("is_causal", False), case.get("scale")
    kwargs = dict(attn_mask=mask, is_causal=causal, scale=scale, block_size=case["block"])

    def tiled(q, k, v):
        return tiled_attention(q, k, v, **kwargs)

    inputs = tuple(x.requires_grad_(True) for x in (q, k, v))
    assert torch.autograd.gradcheck(tiled, inputs)
    if mask is not None:  # the fully masked row: output 0, gradient 0, nothing NaN
        out = tiled(*inputs)
        row = 2 if mask.dtype == torch.bool else 4
        assert torch.equal(out[..., row, :], torch.zeros_like(out[..., row, :]))
        out.backward(torch.ones_like(out))
        assert torch.equal(q.grad[..., row, :], torch.zeros_like(q.grad[..., row, :]))
        assert all(bool(torch.isfinite(x.grad).all()) for x in inputs)


# ---- FlashAttention's rule: dQ, dK, dV against float64 ---------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(("n", "block"), [(64, 64), (200, 64), (200, 128), (512, 128)])
def test_gradients_pass_the_flash_rule(device, dtype, causal, n, block):
    if dtype == torch.float16 and device.type == "cpu":
        pytest.skip("float16 is checked on CUDA; the CPU's 16-bit type is bfloat16")
    q, k, v, d_out = _qkv_do((1, 2, n, 32), (1, 2, n, 32), 32, device=device, dtype=dtype, seed=n + block)
    _assert_flash_rule(block, q, k, v, d_out, is_causal=causal)
    grads = attention_grads(functools.partial(tiled_attention, block_size=block), q, k, v, d_out, is_causal=causal)
    assert [g.dtype for g in grads] == [dtype] * 3  # accumulated in float32, returned in the inputs' dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_masks_and_broadcast_inputs_pass_the_flash_rule(device, dtype):
    # A padding mask that leaves batch 1 no key at all, and k, v shared over the batch (batch dim 1).
    q, k, v, d_out = _qkv_do((3, 2, 50, 16), (1, 2, 70, 16), 8, device=device, dtype=dtype, seed=4)
    mask = padding_mask([70, 0, 33], 70, device=device).unsqueeze(1)  # (3, 1, 1, 70)
    _assert_flash_rule(16, q, k, v, d_out, mask)
    dq, dk, dv = attention_grads(functools.partial(tiled_attention, block_size=16), q, k, v, d_out, mask)
    assert dk.shape == k.shape and dv.shape == v.shape  # summed over the batch they were broadcast on
    assert torch.equal(dq[1], torch.zeros_like(dq[1]))

    gen = torch.Generator().manual_seed(6)
    float_mask = torch.randn(50, 70, generator=gen).to(device)
    float_mask[:, 10:20] = float("-inf")  # no row blocked entirely: textbook attention's gradient would be NaN
    _assert_flash_rule(32, q, k, v, d_out, float_mask)


# float32's gradients on tiny random shapes, against float64: the worst of 400 random cases was
# 6.5 ulps at the gradients' scale (the one-hot rows of _assert_flash_rule's note); 16 leaves room.
FLOAT32_ULPS = 16


@settings(max_examples=25, deadline=None)
@given(**tile_cases(max_n=24, max_e=8, max_block=9))
def test_any_shape_and_upstream_gradient_pass_the_flash_rule(n_q, n_k, e, ev, block, causal, seed):
    q, k, v, d_out = _qkv_do((2, 2, n_q, e), (2, 2, n_k, e), ev, dtype=torch.bfloat16, seed=seed)
    check = gradient_rule(
        attention_grads(functools.partial(tiled_attention, block_size=block), q, k, v, d_out, is_causal=causal),
        q, k, v, d_out, is_causal=causal,
    )
    assert check.passes, check.describe()

    q, k, v, d_out = (x.float() for x in (q, k, v, d_out))
    tiled = functools.partial(tiled_attention, block_size=block)
    grads = attention_grads(tiled, q, k, v, d_out, is_causal=causal)
    reference = attention_grads(textbook_attention, q, k, v, d_out, is_causal=causal, dtype=torch.float64)
    scale = max(float(ref.abs().max()) for ref in reference)
    for grad, ref in zip(grads, reference, strict=True):
        assert float((grad.double() - ref).abs().max()) <= FLOAT32_ULPS * torch.finfo(torch.float32).eps * scale


def test_sum_backward_just_works_and_equals_torch():
    q, k, v, _ = _qkv_do((2, 3, 40, 8), (2, 3, 40, 8), 8, seed=7)
    leaves = [x.clone().requires_grad_(True) for x in (q, k, v)]
    tiled_attention(*leaves, is_causal=True, block_size=16).sum().backward()
    out = _sdpa(*(x.requires_grad_(True) for x in (q, k, v)), is_causal=True)
    expected = torch.autograd.grad(out.sum(), (q, k, v))
    for leaf, grad in zip(leaves, expected, strict=True):
        torch.testing.assert_close(leaf.grad, grad, atol=1e-5, rtol=1e-5)


# ---- what autograd keeps: q, k, v, the output and the row log-sum-exp -------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_return_lse_gives_each_rows_log_sum_exp(device, dtype):
    q, k, v, _ = _qkv_do((2, 30, 8), (2, 45, 8), 8, device=device, dtype=dtype, seed=9)
    mask = padding_mask([45, 20], 45, device=device).expand(2, 30, 45).clone()  # (2, 30, 45)
    mask[0, 4] = False  # one query that sees no key
    out, lse = tiled_attention(q, k, v, mask, block_size=16, return_lse=True)
    assert out.dtype == lse.dtype == torch.float32 and lse.shape == (2, 30)  # unrounded, for the backward
    scores = (q.double() @ k.double().transpose(-2, -1)) * 8**-0.5  # (2, 30, 45)
    expected = torch.logsumexp(scores.masked_fill(~mask, float("-inf")), dim=-1)  # (2, 30)
    assert lse[0, 4] == float("inf")  # P = exp(score − lse) is then 0 for every key
    expected[0, 4] = float("inf")
    torch.testing.assert_close(lse.double(), expected, atol=1e-5 if dtype == torch.float32 else 3e-2, rtol=0)
    torch.testing.assert_close(out.to(dtype), tiled_attention(q, k, v, mask, block_size=16), atol=0, rtol=0)
    with pytest.raises(ValueError, match="forward-only"):
        tiled_attention(q.requires_grad_(True), k, v, return_lse=True)


def _saved_bytes(fn) -> tuple[int, object]:
    """Run ``fn`` under a hook that sees every tensor autograd saves; return their total bytes and fn's result."""
    sizes: list[int] = []

    def pack(x: torch.Tensor) -> torch.Tensor:
        sizes.append(x.numel() * x.element_size())
        return x

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x):
        result = fn()
    return sum(sizes), result


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_autograd_keeps_q_k_v_out_and_lse_only(dtype):
    def saved(n: int) -> int:
        q, k, v, _ = _qkv_do((1, 2, n, 16), (1, 2, n, 16), 16, dtype=dtype)
        leaves = [x.requires_grad_(True) for x in (q, k, v)]
        total, out = _saved_bytes(lambda: tiled_attention(*leaves, block_size=128))
        assert type(out.grad_fn).__name__ == "TiledAttentionFunctionBackward"  # one node: the loop is invisible
        assert [type(f).__name__ for f, _ in out.grad_fn.next_functions] == ["AccumulateGrad"] * 3
        qkv_bytes = 3 * (2 * n * 16 * dtype.itemsize)
        out_bytes, lse_bytes = 2 * n * 16 * 4, 2 * n * 4  # float32, for 16-bit inputs too: (1, 2, n, 16), (1, 2, n)
        assert total == qkv_bytes + out_bytes + lse_bytes  # q, k, v, out and lse: nothing else
        assert total - qkv_bytes == tiled_saved_bytes(n, 16, itemsize=dtype.itemsize, batch_heads=2)
        return total

    assert saved(1024) == 2 * saved(512)  # linear in n
    assert saved(1024) < 2 * 1024 * 1024 * 4 / 10  # naive attention keeps its weights, B·H·n² floats: 15× more


def test_without_gradients_no_graph_and_nothing_saved():
    q, k, v, _ = _qkv_do((1, 64, 8), (1, 64, 8), 8)
    total, out = _saved_bytes(lambda: tiled_attention(q, k, v))
    assert total == 0 and out.grad_fn is None
    with torch.no_grad():
        total, out = _saved_bytes(lambda: tiled_attention(q.requires_grad_(True), k, v))
    assert total == 0 and out.grad_fn is None and not out.requires_grad


def _backward_matmuls(out: torch.Tensor, d_out: torch.Tensor) -> int:
    """How many batched matmuls ``out.backward(d_out)`` runs (the profiler sees into autograd's engine)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out.backward(d_out)
    return sum(event.count for event in prof.key_averages() if event.key in ("aten::bmm", "aten::baddbmm_"))


@pytest.mark.parametrize(("n", "block", "tiles"), [(64, 16, 4 * 5 // 2), (60, 16, 4 * 5 // 2), (32, 32, 1)])
def test_causal_backward_skips_the_tiles_above_the_diagonal(n, block, tiles):
    def matmuls(is_causal: bool) -> int:
        q, k, v, d_out = _qkv_do((1, n, 8), (1, n, 8), 8)
        out = tiled_attention(*(x.requires_grad_(True) for x in (q, k, v)), is_causal=is_causal, block_size=block)
        return _backward_matmuls(out, d_out)

    blocks = -(-n // block)
    assert matmuls(False) == 5 * blocks * blocks  # S, dV, dP, dQ, dK per tile
    assert matmuls(True) == 5 * tiles  # only the tiles on or below the diagonal, as the forward


# ---- validation ---------------------------------------------------------------------------------


def test_bad_inputs_still_raise_value_error_when_gradients_are_wanted():
    q, k, v, _ = _qkv_do((1, 4, 8), (1, 4, 8), 8)
    q.requires_grad_(True)
    with pytest.raises(ValueError, match="dropout"):
        tiled_attention(q, k, v, dropout_p=0.1)
    with pytest.raises(ValueError, match="feature size"):
        tiled_attention(q, k[..., :7], v)
    with pytest.raises(ValueError, match="finite"):
        tiled_attention(q, k, torch.full_like(v, float("nan")))
    with pytest.raises(ValueError, match="attn_mask"):
        tiled_attention(q, k, v, attn_mask=torch.zeros(4, 4, requires_grad=True))
