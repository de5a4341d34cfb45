"""The backward pass written out in steps (attention_core.backward) against torch's autograd in float64."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import attention_trace
from attention_core.backward import attention_backward


def autograd_grads(q, k, v, grad_output, **kwargs):
    """dQ, dK, dV of the trace's output by autograd: the independent reference."""
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out = attention_trace(q, k, v, **kwargs).output
    out.backward(grad_output)
    return q.grad, k.grad, v.grad


def stepwise(q, k, v, grad_output, **kwargs):
    b = attention_backward(q, k, v, attention_trace(q, k, v, **kwargs), grad_output)
    return b.grad_q, b.grad_k, b.grad_v


@settings(max_examples=60, deadline=None)
@given(
    n_q=st.integers(1, 7), n_k=st.integers(1, 7), d=st.integers(1, 5), d_v=st.integers(1, 5),
    causal=st.booleans(), scaled=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_each_step_matches_autograd(n_q: int, n_k: int, d: int, d_v: int, causal: bool, scaled: bool, seed: int):
    g = torch.Generator().manual_seed(seed)
    shapes = ((n_q, d), (n_k, d), (n_k, d_v), (n_q, d_v))
    q, k, v, grad_output = (torch.randn(*s, generator=g, dtype=torch.float64) for s in shapes)
    kwargs = {"is_causal": causal, "scale": None if scaled else 1.0}
    ours, ref = stepwise(q, k, v, grad_output, **kwargs), autograd_grads(q, k, v, grad_output, **kwargs)
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_masked_rows_dropout_and_batches_match_autograd() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    grad_output = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64)
    allowed = torch.rand(2, 1, 5, 5, generator=g) > 0.4
    allowed[0, 0, 2] = False  # a query that may see no key: zero weights, zero gradient
    for kwargs in ({"attn_mask": allowed}, {"dropout_p": 0.3}, {"dropout_p": 1.0}):  # p = 1: every weight dropped, 0
        ours = stepwise(q, k, v, grad_output, generator=torch.Generator().manual_seed(1), **kwargs)
        ref = autograd_grads(q, k, v, grad_output, generator=torch.Generator().manual_seed(1), **kwargs)
        for a, b in zip(ours, ref, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    trace = attention_trace(q, k, v, attn_mask=allowed)
    back = attention_backward(q, k, v, trace, grad_output)
    assert torch.equal(back.grad_scores[0, 0, 2], torch.zeros(5, dtype=torch.float64))


def test_row_dot_is_the_one_number_softmax_needs_per_row() -> None:
    """D = rowsum(dO ∘ O) equals p·dP for every row: softmax's backward needs P and D only."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(6, 4, generator=g, dtype=torch.float64) for _ in range(3))
    trace = attention_trace(q, k, v, is_causal=True)
    back = attention_backward(q, k, v, trace, torch.randn(6, 4, generator=g, dtype=torch.float64))
    torch.testing.assert_close(back.row_dot, (trace.weights * back.grad_weights).sum(-1, keepdim=True))


def test_bad_upstream_gradients_are_rejected() -> None:
    q = torch.randn(3, 2)
    trace = attention_trace(q, q, q)
    with pytest.raises(ValueError, match="shape"):
        attention_backward(q, q, q, trace, torch.ones(2, 2))
    with pytest.raises(ValueError, match="dtype"):
        attention_backward(q, q, q, trace, torch.ones(3, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"finite|NaN"):
        attention_backward(q, q, q, trace, torch.full((3, 2), float("nan")))
    other = torch.randn(4, 2)  # k and v agree with each other, not with the trace's 3 keys
    with pytest.raises(ValueError, match="inputs of trace"):
        attention_backward(q, other, other, trace, torch.ones(3, 2))
