"""The lean one-call path: no extra pass over the scores, wider masks, the trace's gradients, overflow."""

from __future__ import annotations

import pytest
import torch
from attention_checks import NEG_INF, randn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from attention_core import attention_trace, dot_product_attention

# ---------------------------------------------------------------- the lean one-call path


class _Ops(TorchDispatchMode):
    """Records every aten op and the largest tensor among its arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        sizes = [a.numel() for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        self.ops.append((func.overloadpacket.__name__, max(sizes, default=0)))
        return func(*args, **kwargs)


# What the lean path may do to an (N, ..., L, S) tensor: the product, the mask, the softmax,
# the weighted sum, dropout, and the views matmul makes. No isnan/isinf/where/any/all/amax.
LEAN_SCORE_OPS = {"bmm", "_unsafe_view", "view", "expand", "masked_fill_", "add_", "_softmax", "mul_", "div_", "ge"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"is_causal": True},
        {"attn_mask": torch.ones(48, 48, dtype=torch.bool).tril()},
        {"attn_mask": torch.zeros(48, 48).masked_fill(torch.eye(48, dtype=torch.bool), NEG_INF)},
        {"dropout_p": 0.25},
    ],
    ids=["plain", "causal", "bool_mask", "float_mask", "dropout"],
)
def test_the_one_call_path_makes_no_pass_over_the_scores_beyond_the_computation(kwargs: dict) -> None:
    gen = torch.Generator().manual_seed(21)
    q, k, v = (randn(gen, 2, 3, 48, 8) for _ in range(3))
    scores_numel = 2 * 3 * 48 * 48
    seeded = {"generator": torch.Generator().manual_seed(0)} if "dropout_p" in kwargs else {}
    with _Ops() as lean:
        out = dot_product_attention(q, k, v, **kwargs, **seeded)
    extra = {name for name, size in lean.ops if size >= scores_numel} - LEAN_SCORE_OPS
    assert not extra, f"the one-call path touched the scores with {sorted(extra)}"
    with _Ops() as traced:  # the same recorder sees the trace's O(n²) checks: the test can fail
        seeded = {"generator": torch.Generator().manual_seed(0)} if "dropout_p" in kwargs else {}
        trace = attention_trace(q, k, v, **kwargs, **seeded)
    assert {"isnan", "isposinf", "where"} <= {name for name, size in traced.ops if size >= scores_numel}
    torch.testing.assert_close(out, trace.output)  # same generator seed: the same dropout pattern


def test_the_one_call_path_handles_a_mask_wider_than_the_scores() -> None:
    """q and k have no batch dim but v and the mask do: the mask cannot be applied in place."""
    gen = torch.Generator().manual_seed(22)
    q, k, v = randn(gen, 5, 4), randn(gen, 6, 4), randn(gen, 3, 6, 2)
    mask = torch.rand(3, 5, 6, generator=gen) < 0.6
    mask[1, 2] = False  # one fully masked row
    for m in (mask, torch.zeros(3, 5, 6).masked_fill(~mask, NEG_INF)):
        out = dot_product_attention(q, k, v, m)
        assert out.shape == (3, 5, 2)
        torch.testing.assert_close(out, attention_trace(q, k, v, m).output)
        assert torch.equal(out[1, 2], torch.zeros(2))


def test_the_one_call_path_gives_the_traces_gradients() -> None:
    """In-place steps must not break autograd, dropout and a fully masked row included."""
    gen = torch.Generator().manual_seed(23)
    leaves = [randn(gen, 2, 6, 4).requires_grad_() for _ in range(3)]
    mask = torch.rand(6, 6, generator=gen) < 0.7
    mask[3] = False
    grads = []
    for fn in (dot_product_attention, lambda *a, **kw: attention_trace(*a, **kw).output):
        out = fn(*leaves, mask, dropout_p=0.3, generator=torch.Generator().manual_seed(5))
        grads.append(torch.autograd.grad(out.square().sum(), leaves))
    for lean, traced in zip(*grads, strict=True):
        torch.testing.assert_close(lean, traced)


def test_the_one_call_path_rejects_scores_that_overflow_even_under_a_mask() -> None:
    """float16 products past 65504 give inf; the lean path catches them from its output."""
    q = torch.full((1, 3, 4), 300.0, dtype=torch.float16)
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    with pytest.raises(ValueError, match="overflowed"):
        dot_product_attention(q, q, q, mask)
