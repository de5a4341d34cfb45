"""Validation: every invalid call raises a ValueError that names the problem; the edges stay legal."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from attention_checks import NEG_INF
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import attention_trace, dot_product_attention
from attention_core.validation import broadcast_shapes, check_bool, check_ints

# ---------------------------------------------------------------- validation


def _qkv(L: int = 3, S: int = 4, E: int = 5, Ev: int = 2, dtype: torch.dtype = torch.float32):
    gen = torch.Generator().manual_seed(11)
    return (
        torch.randn(2, L, E, generator=gen).to(dtype),
        torch.randn(2, S, E, generator=gen).to(dtype),
        torch.randn(2, S, Ev, generator=gen).to(dtype),
    )


def _with(index: int, value: torch.Tensor) -> tuple:
    args = list(_qkv())
    args[index] = value
    return tuple(args)


def _poisoned(index: int, value: float) -> tuple:
    args = list(_qkv())
    args[index] = args[index].clone()
    args[index][0, 0, 0] = value
    return tuple(args)


BAD_CALLS = [
    ("E_differs", lambda: ((*_qkv()[:1], torch.randn(2, 4, 6), _qkv()[2]), {}), "same feature size E"),
    ("S_differs", lambda: (_with(2, torch.randn(2, 5, 2)), {}), "same number of keys S"),
    ("lead_dims_clash", lambda: (_with(1, torch.randn(3, 4, 5)), {}), "must broadcast"),
    ("mask_wrong_S", lambda: (_qkv(), {"attn_mask": torch.ones(3, 5, dtype=torch.bool)}), "does not broadcast"),
    ("mask_wrong_L", lambda: (_qkv(), {"attn_mask": torch.ones(2, 4, dtype=torch.bool)}), "does not broadcast"),
    ("mask_too_many_dims", lambda: (_qkv(), {"attn_mask": torch.ones(4, 2, 3, 4, dtype=torch.bool)}), "broadcast"),
    (
        "mask_with_causal",
        lambda: (_qkv(), {"attn_mask": torch.ones(3, 4, dtype=torch.bool), "is_causal": True}),
        "either attn_mask or is_causal",
    ),
    ("mask_int", lambda: (_qkv(), {"attn_mask": torch.ones(3, 4, dtype=torch.int64)}), "attn_mask must be bool"),
    ("mask_not_tensor", lambda: (_qkv(), {"attn_mask": [[True] * 4] * 3}), "attn_mask must be a torch.Tensor"),
    ("mask_nan", lambda: (_qkv(), {"attn_mask": torch.full((3, 4), float("nan"))}), "NaN or \\+inf"),
    ("mask_pos_inf", lambda: (_qkv(), {"attn_mask": torch.full((3, 4), float("inf"))}), "NaN or \\+inf"),
    ("q_int", lambda: (_with(0, torch.ones(2, 3, 5, dtype=torch.int64)), {}), "q must have a floating dtype"),
    ("k_int32", lambda: (_with(1, torch.ones(2, 4, 5, dtype=torch.int32)), {}), "k must have a floating dtype"),
    ("v_bool", lambda: (_with(2, torch.ones(2, 4, 2, dtype=torch.bool)), {}), "v must have a floating dtype"),
    ("q_nan", lambda: (_poisoned(0, float("nan")), {}), "q contains NaN or inf"),
    ("k_inf", lambda: (_poisoned(1, float("inf")), {}), "k contains NaN or inf"),
    ("v_neg_inf", lambda: (_poisoned(2, NEG_INF), {}), "v contains NaN or inf"),
    ("dtypes_differ", lambda: (_with(2, torch.randn(2, 4, 2, dtype=torch.float64)), {}), "share one dtype"),
    ("q_1d", lambda: (_with(0, torch.randn(5)), {}), "at least 2 dimension"),
    ("q_not_tensor", lambda: (_with(0, [[1.0] * 5] * 3), {}), "q must be a torch.Tensor"),
    ("E_zero", lambda: (_qkv(E=0), {}), "E \\(d_k\\) must be > 0"),
    ("dropout_negative", lambda: (_qkv(), {"dropout_p": -0.1}), "dropout_p must be ≥ 0"),
    ("dropout_big", lambda: (_qkv(), {"dropout_p": 1.5}), "dropout_p must be ≤ 1"),
    ("dropout_nan", lambda: (_qkv(), {"dropout_p": float("nan")}), "dropout_p must be finite"),
    ("dropout_text", lambda: (_qkv(), {"dropout_p": "lots"}), "dropout_p must be a real number"),
    ("scale_inf", lambda: (_qkv(), {"scale": float("inf")}), "scale must be finite"),
    ("scale_nan", lambda: (_qkv(), {"scale": float("nan")}), "scale must be finite"),
    ("scale_huge_int", lambda: (_qkv(), {"scale": 10**400}), "scale must be finite"),
    ("fp16_overflow", lambda: ((torch.full((1, 2, 4), 300.0, dtype=torch.float16),) * 3, {}), "overflowed"),
]


@pytest.mark.parametrize("fn", [dot_product_attention, attention_trace], ids=["dot_product", "trace"])
@pytest.mark.parametrize("make, match", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_validation_errors(fn, make, match: str) -> None:
    args, kwargs = make()
    with pytest.raises(ValueError, match=match):
        fn(*args, **kwargs)


def test_validation_accepts_the_edges() -> None:
    """The boundaries that must stay legal: dropout 0, a tiny positive scale, a 1×1 problem."""
    q, k, v = _qkv(L=1, S=1, E=1, Ev=1)
    assert dot_product_attention(q, k, v, dropout_p=0.0, scale=1e-6).shape == (2, 1, 1)
    torch.testing.assert_close(dot_product_attention(q, k, v), v)  # one key takes all the weight


def test_mask_on_another_device_is_rejected() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA to put the mask elsewhere")
    q, k, v = (t.cuda() for t in _qkv())
    with pytest.raises(ValueError, match="attn_mask is on cpu but q is on cuda"):
        dot_product_attention(q, k, v, torch.ones(3, 4, dtype=torch.bool))


def test_check_bool_takes_only_true_or_false() -> None:
    """A flag that is truthy but no bool (1, numpy's bool, "no") is refused, where ``if flag:`` would guess."""
    assert check_bool("causal", True) is True and check_bool("causal", False) is False
    for bad in (1, 0, np.bool_(True), "no", None):
        with pytest.raises(ValueError, match="causal must be True or False"):
            check_bool("causal", bad)


def test_check_ints_names_the_value_out_of_range() -> None:
    """Several integers under one pair of bounds: returned in order (numpy's as int), the bad one named."""
    assert check_ints(n_q=np.int64(3), n_k=5, low=1, high=8) == (3, 5)
    with pytest.raises(ValueError, match="n_k must be ≤ 8, got 9"):
        check_ints(n_q=3, n_k=9, low=1, high=8)
    with pytest.raises(ValueError, match="n_q must be an integer"):
        check_ints(n_q=2.0, n_k=1, low=1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=4), min_size=1, max_size=3))
def test_broadcast_shapes_follows_torch(shapes: list[list[int]]) -> None:
    """The pure-Python broadcast (no sympy import on a cold start) agrees with torch's, error included."""
    try:
        expected: tuple[int, ...] | None = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError, match="do not broadcast"):
            broadcast_shapes(*shapes)
    else:
        assert broadcast_shapes(*shapes) == expected
