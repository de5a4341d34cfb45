"""Attention under a pattern: the dense and SDPA backends against a float64 reference, fully masked
rows, and the flex backend's fallback when it cannot compile. (The compiled flex path itself is
tested in test_efficient_flex.py, which pays for the compile once.)"""

from __future__ import annotations

import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_core.efficient import (
    NO_COMPILE_ENV,
    and_masks,
    bigbird,
    causal,
    dense_mask,
    dilated_window,
    masked_attention,
    random_qkv,
    sliding_window,
    window_with_globals,
)
from attention_core.efficient import flex as flex_module
from attention_core.textbook import reference_attention

PROPS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

PATTERNS = {
    "window": sliding_window(5),
    "globals": window_with_globals(3, 2),
    "dilated": dilated_window(3, 2),
    "bigbird": bigbird(1, 1, 1, 16, seed=0, n=70),
    "causal window": and_masks(sliding_window(4), causal()),
}


def _reference(q, k, v, mask):
    """float64 softmax over the allowed keys, zeros for a row with none (plain torch ops)."""
    return reference_attention(q, k, v, mask)


@pytest.mark.parametrize("backend", ["dense", "sdpa"])
@pytest.mark.parametrize("name", list(PATTERNS))
def test_dense_backends_equal_the_float64_reference(device, backend, name):
    q, k, v = random_qkv(70, 16, heads=3, batch=2, seed=1, device=device)
    result = masked_attention(q, k, v, PATTERNS[name], backend=backend)
    assert result.backend == backend and result.fallback is None
    expected = _reference(q, k, v, dense_mask(PATTERNS[name], 70, 70, device=device))
    torch.testing.assert_close(result.output.double(), expected, atol=2e-6, rtol=2e-6)


@PROPS
@given(n=st.integers(1, 60), window=st.integers(60, 100), heads=st.integers(1, 3))
def test_a_window_at_least_n_is_exact_attention(n, window, heads):
    q, k, v = random_qkv(n, 8, heads=heads, seed=n)
    exact = reference_attention(q, k, v)
    for backend in ("dense", "sdpa"):
        out = masked_attention(q, k, v, sliding_window(window), backend=backend).output
        torch.testing.assert_close(out.double(), exact, atol=2e-6, rtol=2e-6)


def _dead_rows(b, h, q_idx, kv_idx):
    """A hand-written pattern that leaves queries 10–14 with no key at all."""
    return ((q_idx < 10) | (q_idx >= 15)) & ((q_idx - kv_idx).abs() <= 3)


@pytest.mark.parametrize("backend", ["dense", "sdpa"])
def test_a_fully_masked_row_gives_zeros_never_nan(device, backend):
    q, k, v = random_qkv(32, 8, heads=2, seed=2, device=device)
    out = masked_attention(q, k, v, _dead_rows, backend=backend).output
    assert not bool(out.isnan().any())
    assert bool((out[..., 10:15, :] == 0).all())
    expected = _reference(q, k, v, dense_mask(_dead_rows, 32, 32, device=device))
    torch.testing.assert_close(out.double(), expected, atol=2e-6, rtol=2e-6)
    weights = masked_attention(q, k, torch.eye(32, device=device), _dead_rows).output  # the values I: the weights
    assert bool((weights[..., 10:15, :] == 0).all())
    torch.testing.assert_close(weights[..., :10, :].sum(-1), torch.ones(1, 2, 10, device=device))


def test_flex_falls_back_to_sdpa_and_says_why(monkeypatch):
    monkeypatch.setenv(NO_COMPILE_ENV, "1")
    q, k, v = random_qkv(50, 8, heads=2, seed=4)
    result = masked_attention(q, k, v, sliding_window(6), backend="flex")
    assert result.backend == "sdpa" and NO_COMPILE_ENV in result.fallback
    assert result.plan is None
    torch.testing.assert_close(result.output, masked_attention(q, k, v, sliding_window(6), backend="dense").output)


def test_without_a_cpp_compiler_flex_says_so(monkeypatch):
    monkeypatch.delenv(NO_COMPILE_ENV, raising=False)
    monkeypatch.setattr(flex_module, "_has_cpp_compiler", lambda: False)
    assert "C++ compiler" in flex_module.flex_available("cpu")
    q, k, v = random_qkv(20, 8, seed=5)
    result = masked_attention(q, k, v, sliding_window(3), backend="flex")
    assert result.backend == "sdpa" and "C++ compiler" in result.fallback


def test_the_compiler_is_looked_up_as_inductor_would_without_loading_it(monkeypatch):
    monkeypatch.delenv(NO_COMPILE_ENV, raising=False)
    monkeypatch.delitem(sys.modules, "torch._inductor.config", raising=False)  # as in a fresh process
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    assert "C++ compiler" in flex_module.flex_available("cpu")
    assert "torch._inductor.config" not in sys.modules


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"backend": "numpy"}, "backend must be one of"),
        ({"scale": 0.0}, "scale must be > 0"),
    ],
)
def test_bad_arguments_say_what_was_expected(kwargs, match):
    q, k, v = random_qkv(8, 4, seed=6)
    with pytest.raises(ValueError, match=match):
        masked_attention(q, k, v, sliding_window(2), **kwargs)


def test_bad_inputs_and_patterns_are_refused():
    q, k, v = random_qkv(8, 4, seed=6)
    with pytest.raises(ValueError, match="mask_mod must be a function"):
        masked_attention(q, k, v, None)
    with pytest.raises(ValueError, match="NaN or inf"):
        masked_attention(q * float("nan"), k, v, sliding_window(2))
    with pytest.raises(ValueError, match="up to 128 tokens"):
        masked_attention(*random_qkv(200, 4), bigbird(1, 1, 1, 16, seed=0, n=100))
