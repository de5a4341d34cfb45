"""The edge cases of torch's SDPA that our attention follows (issue 29): any finite scale (negative and 0
too), dropout_p = 1, and empty L, S or batch. Each is checked against torch's own answer."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import attention_core as ac

PATHS: dict[str, Callable[..., torch.Tensor]] = {
    "dot_product": ac.dot_product_attention,
    "trace": lambda *a, **kw: ac.attention_trace(*a, **kw).output,
    "textbook": ac.textbook_attention,
    "reference": ac.reference_attention,
    "tiled": lambda *a, **kw: ac.tiled_attention(*a, **kw, block_size=3),
}


def _qkv(L: int = 5, S: int = 7, E: int = 4, Ev: int = 3, batch: int = 2) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(batch, n, e, generator=g, dtype=torch.float64) for n, e in ((L, E), (S, E), (S, Ev)))


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("scale", [-0.5, 0.0, 3.0])
@pytest.mark.parametrize("causal", [False, True])
def test_any_finite_scale_as_torch(path: str, scale: float, causal: bool) -> None:
    q, k, v = _qkv()
    out = PATHS[path](q, k, v, is_causal=causal, scale=scale)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale))


def test_scale_zero_averages_the_values() -> None:
    q, k, v = _qkv()
    mean = v.mean(-2, keepdim=True).expand(2, 5, 3)  # (N, L, Ev): every query gets the mean of the values
    torch.testing.assert_close(ac.dot_product_attention(q, k, v, scale=0.0), mean)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("shape", [dict(L=0), dict(S=0), dict(batch=0), dict(L=0, S=0)], ids=str)
def test_empty_inputs_as_torch(path: str, shape: dict[str, int]) -> None:
    q, k, v = _qkv(**shape)
    out = PATHS[path](q, k, v)
    want = F.scaled_dot_product_attention(q, k, v)  # no keys: zeros; no queries: an empty output
    assert out.shape == want.shape
    torch.testing.assert_close(out, want)


@pytest.mark.parametrize("path", ["dot_product", "trace"])
def test_dropout_one_drops_every_weight_as_torch(path: str) -> None:
    q, k, v = _qkv()
    out = PATHS[path](q, k, v, dropout_p=1.0)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, dropout_p=1.0))
    assert not bool(out.any())


@pytest.mark.parametrize("bad", [{"scale": float("inf")}, {"scale": float("nan")}, {"dropout_p": 1.01}])
def test_what_torch_turns_into_nan_or_refuses_we_refuse(bad: dict[str, float]) -> None:
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"scale|dropout_p"):
        ac.dot_product_attention(q, k, v, **bad)


def test_a_zero_feature_size_is_refused() -> None:
    """torch returns the mean of v for E = 0; the default scale 1/√E has no value there, so we say so."""
    q, k, v = _qkv(E=0)
    with pytest.raises(ValueError, match=r"E \(d_k\) must be > 0"):
        ac.dot_product_attention(q, k, v)


def test_the_approximations_keep_a_positive_scale_and_a_key() -> None:
    """Random features estimate exp(scale·q·k) through √scale: they need scale > 0 and at least one key."""
    from attention_core.efficient import performer_attention

    q, k, v = (t.float() for t in _qkv())
    with pytest.raises(ValueError, match=r"scale must be > 0"):
        performer_attention(q, k, v, features=8, seed=0, scale=-1.0)
    with pytest.raises(ValueError, match="at least 1 key"):
        performer_attention(*(t.float() for t in _qkv(S=0)), features=8, seed=0)


@pytest.mark.parametrize("shape", [dict(L=0), dict(S=0), dict(batch=0)], ids=str)
def test_empty_inputs_get_gradients_as_torch(shape: dict[str, int]) -> None:
    def grads(attention: Callable[..., torch.Tensor]) -> tuple[torch.Tensor, ...]:
        leaves = [t.requires_grad_(True) for t in _qkv(**shape)]
        out = attention(*leaves, scale=-0.7)
        return torch.autograd.grad(out, leaves, torch.ones_like(out), allow_unused=True, materialize_grads=True)

    for mine, theirs in zip(grads(ac.tiled_attention), grads(F.scaled_dot_product_attention), strict=True):
        torch.testing.assert_close(mine, theirs)
