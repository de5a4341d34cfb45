"""Finite 16-bit inputs whose scores overflow the dtype: every public entry point either computes the
right answer (working in float32 inside, as torch does) or raises a ValueError that names the overflow.
Never NaN, inf or a silent 0 (issue 29).

float16 tops out at 65,504: q = k = 300 with d = 64 gives scores of 720,000 (90,000 after ÷√d).
bfloat16 reaches 3.4e38, float32's range, so q = k = 1e19 overflows float32 too: there the only right
answers are torch's float64 one or the error. Every key is the same, so every weight is 1/S and the
exact output is the mean of v: finite and small.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import torch

import attention_core as ac
import attention_core.efficient as eff
from attention_core import kv_cache
from attention_core.textbook import reference_attention

BIG = {torch.float16: 300.0, torch.bfloat16: 1e19}
L, D = 6, 64


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q = torch.full((1, 2, L, D), BIG[dtype], dtype=dtype)  # (1, 2, L, D)
    v = torch.randn(1, 2, L, D, generator=torch.Generator().manual_seed(0)).to(dtype)  # (1, 2, L, D)
    return q, q.clone(), v


def _eye_heads(dtype: torch.dtype, fn: Callable[..., object]) -> Callable[..., object]:
    """Multi-head entry points fed x = q with identity projections: one head whose q, k, v are the inputs'."""

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> object:
        eye = torch.eye(D, dtype=q.dtype)
        return fn(q[0, 0], eye, eye, eye, eye, 1)

    return run


def _self_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> object:
    layer = ac.SelfAttention(D, 1, bias=False).to(q.dtype)
    with torch.no_grad():
        for lin in (layer.w_q, layer.w_k, layer.w_v, layer.w_o):
            lin.weight.copy_(torch.eye(D))
        return layer(q[0]), layer(q[0], need_weights=True)


def _tiled_grads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
    leaves = [x.detach().requires_grad_(True) for x in (q, k, v)]
    out = ac.tiled_attention(*leaves, block_size=4)
    return torch.autograd.grad(out, leaves, torch.ones_like(out))


def _decode_with_cache(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> object:
    eye = torch.eye(D, dtype=q.dtype)
    return kv_cache.decode_with_cache(q[0, 0], eye, eye, eye, eye, 1).output


def _everything() -> torch.Tensor:
    """A bool mask that allows every key: the masked code paths, with the same answer."""
    return torch.ones(L, L, dtype=torch.bool)


# name → the entry point on (q, k, v); approximations are held to their own float64 run
EXACT: dict[str, Callable[..., object]] = {
    "textbook_attention": lambda q, k, v: ac.textbook_attention(q, k, v),
    "textbook_attention with a mask": lambda q, k, v: ac.textbook_attention(q, k, v, _everything()),
    "dot_product_attention": lambda q, k, v: ac.dot_product_attention(q, k, v),
    "dot_product_attention with a mask": lambda q, k, v: ac.dot_product_attention(q, k, v, _everything()),
    "attention_trace": lambda q, k, v: ac.attention_trace(q, k, v).output,
    "tiled_attention": lambda q, k, v: ac.tiled_attention(q, k, v, block_size=4),
    "tiled_attention with a mask": lambda q, k, v: ac.tiled_attention(q, k, v, _everything()),
    "tiled_attention causal": lambda q, k, v: ac.tiled_attention(q, k, v, is_causal=True, block_size=4),
    "decode_step": lambda q, k, v: kv_cache.decode_step(q[..., :1, :], k, v),
    "masked_attention dense": lambda q, k, v: eff.masked_attention(q, k, v, eff.sliding_window(L)).output,
    "masked_attention sdpa": lambda q, k, v: eff.masked_attention(
        q, k, v, eff.sliding_window(L), backend="sdpa"
    ).output,
}
HEADS: dict[str, Callable[..., object]] = {
    "multi_head_attention": lambda dtype: _eye_heads(dtype, ac.multi_head_attention),
    "multi_head_trace": lambda dtype: _eye_heads(dtype, lambda *a: ac.multi_head_trace(*a).output),
    "decode_with_cache": lambda dtype: _decode_with_cache,
    "SelfAttention": lambda dtype: _self_attention,
}
APPROXIMATE: dict[str, Callable[..., object]] = {
    "performer_attention": lambda q, k, v: eff.performer_attention(q, k, v, features=16, seed=0),
    "linear_attention": lambda q, k, v: eff.linear_attention(q, k, v),
    "linear_attention causal": lambda q, k, v: eff.linear_attention(q, k, v, is_causal=True),
    "linear_attention_recurrent": lambda q, k, v: eff.linear_attention_recurrent(q, k, v),
    "linformer_attention": lambda q, k, v: eff.linformer_attention(q, k, v, rank=4, seed=0, kind="pool"),
    "variant_attention performer": lambda q, k, v: eff.variant_attention(q, k, v, "performer", features=16).output,
    "variant_attention window": lambda q, k, v: eff.variant_attention(q, k, v, "window", window=2).output,
    "variant_attention linear": lambda q, k, v: eff.variant_attention(q, k, v, "linear"),
    "variant_attention linformer": lambda q, k, v: eff.variant_attention(q, k, v, "linformer", rank=4, kind="pool"),
}
DTYPES = [torch.float16, torch.bfloat16]


def _tensors(result: object) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _tensors(r)]
    if dataclasses.is_dataclass(result):
        return [t for f in dataclasses.fields(result) for t in _tensors(getattr(result, f.name))]
    return []


def _right_or_raises(run: Callable[[], object], expected: Callable[[], torch.Tensor]) -> None:
    try:
        result = run()
    except ValueError as exc:
        assert "overflow" in str(exc), str(exc)
        return
    for t in _tensors(result):
        assert bool(torch.isfinite(t).all()), f"NaN or inf returned without a word: {t}"
    got = _tensors(result)
    want = expected()
    for t in got:
        if t.shape == want.shape:  # an output, not a weight or a cache
            torch.testing.assert_close(t.double(), want, rtol=2e-2, atol=2e-2 * float(want.abs().max()))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(EXACT))
def test_exact_entry_points_are_right_or_raise(name: str, dtype: torch.dtype) -> None:
    q, k, v = _inputs(dtype)
    causal = "causal" in name
    _right_or_raises(lambda: EXACT[name](q, k, v), lambda: reference_attention(q, k, v, is_causal=causal))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(HEADS))
def test_head_and_decoding_entry_points_are_right_or_raise(name: str, dtype: torch.dtype) -> None:
    q, k, v = _inputs(dtype)
    q1 = q[0, 0]  # (L, D): x, whose identity projections give q = k = v = x
    # each query i of the cached decode, and of a causal layer, sees keys 0..i; others see every key
    causal = name in ("decode_with_cache",)
    expected = reference_attention(q1, q1, q1, is_causal=causal)  # (L, D): the mean of equal rows is that row
    _right_or_raises(lambda: HEADS[name](dtype)(q, k, v), lambda: expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(APPROXIMATE))
def test_approximations_are_right_or_raise(name: str, dtype: torch.dtype) -> None:
    q, k, v = _inputs(dtype)
    _right_or_raises(lambda: APPROXIMATE[name](q, k, v), lambda: APPROXIMATE[name](q.double(), k.double(), v.double()))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_tiled_gradients_are_right_or_raise(dtype: torch.dtype) -> None:
    q, k, v = _inputs(dtype)

    def reference() -> tuple[torch.Tensor, ...]:
        leaves = [x.double().requires_grad_(True) for x in (q, k, v)]
        out = reference_attention(*leaves)
        return torch.autograd.grad(out, leaves, torch.ones_like(out))

    try:
        grads = _tiled_grads(q, k, v)
    except ValueError as exc:
        assert "overflow" in str(exc)
        return
    for got, want in zip(grads, reference(), strict=True):
        assert bool(torch.isfinite(got).all())
        torch.testing.assert_close(got.double(), want, rtol=2e-2, atol=2e-2 * max(float(want.abs().max()), 1.0))


def test_float16_tiled_attention_computes_the_answer_torch_gives() -> None:
    """The issue's case: torch's SDPA returns 300 and so does the tiled kernel, whose scores are float32."""
    q = k = v = torch.full((1, 4, 64), 300.0, dtype=torch.float16)
    torch.testing.assert_close(ac.tiled_attention(q, k, v), torch.nn.functional.scaled_dot_product_attention(q, k, v))
    with pytest.raises(ValueError, match=r"overflowed torch\.float16"):
        ac.textbook_attention(q, k, v)
