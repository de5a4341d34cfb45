"""The explained attention path against torch's SDPA, a float64 reference, and its own promises.

The float64 reference below is written with numpy and plain loops, one query row at a
time, so it shares no code (and no torch kernel) with the core.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attention_core import attention_trace, flash_rule, padding_mask, scaled_dot_product_attention, stable_softmax

PROPS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
NEG_INF = float("-inf")


# ---------------------------------------------------------------- helpers


def randn(gen: torch.Generator, *shape: int, device: torch.device | str = "cpu", scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=gen) * scale).to(device)


def make_mask(kind: str | None, shape: tuple[int, ...], gen: torch.Generator, device: torch.device | str):
    """A random bool or float mask whose first query row is fully masked (the zero-row case)."""
    if kind is None:
        return None
    blocked = torch.rand(shape, generator=gen) < 0.3
    blocked[..., 0, :] = True
    if kind == "bool":
        return (~blocked).to(device)
    values = torch.randn(shape, generator=gen)  # a float mask is added: any finite value, or −inf to block
    return values.masked_fill(blocked, NEG_INF).to(device)


def reference_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(weights, output) in float64, one query row at a time; a fully masked row gives zeros."""
    q64, k64, v64 = (t.detach().cpu().double().numpy() for t in (q, k, v))
    L, E = q64.shape[-2:]
    S, Ev = v64.shape[-2:]
    lead = np.broadcast_shapes(q64.shape[:-2], k64.shape[:-2], v64.shape[:-2])
    qb = np.broadcast_to(q64, (*lead, L, E)).reshape(-1, L, E)
    kb = np.broadcast_to(k64, (*lead, S, E)).reshape(-1, S, E)
    vb = np.broadcast_to(v64, (*lead, S, Ev)).reshape(-1, S, Ev)
    allowed = np.ones((*lead, L, S), dtype=bool)
    added = np.zeros((*lead, L, S))
    if is_causal:
        allowed &= np.array([[j <= i for j in range(S)] for i in range(L)])  # top-left aligned
    if mask is not None:
        m = mask.detach().cpu()
        if m.dtype == torch.bool:
            allowed &= np.broadcast_to(m.numpy(), (*lead, L, S))
        else:
            m64 = np.broadcast_to(m.double().numpy(), (*lead, L, S))
            allowed &= ~np.isneginf(m64)
            added = np.where(np.isneginf(m64), 0.0, m64)
    allowed = allowed.reshape(-1, L, S)
    added = added.reshape(-1, L, S)
    s = 1.0 / math.sqrt(E) if scale is None else scale

    weights = np.zeros((qb.shape[0], L, S))
    out = np.zeros((qb.shape[0], L, Ev))
    for b in range(qb.shape[0]):
        for i in range(L):
            logits = [
                float(np.dot(qb[b, i], kb[b, j])) * s + added[b, i, j] if allowed[b, i, j] else NEG_INF
                for j in range(S)
            ]
            top = max(logits)
            if top == NEG_INF:
                continue  # no key may be attended: zero weights, zero output
            e = [math.exp(x - top) for x in logits]
            total = math.fsum(e)
            for j in range(S):
                weights[b, i, j] = e[j] / total
                out[b, i] += weights[b, i, j] * vb[b, j]
    return weights.reshape(*lead, L, S), out.reshape(*lead, L, Ev)


def max_err(x: torch.Tensor, ref: np.ndarray) -> float:
    return float(np.abs(x.detach().cpu().double().numpy() - ref).max())


# One row per situation the issue names: (id, q shape, k shape, v shape, mask kind, mask shape, is_causal, scale)
CASES = [
    ("2d", (5, 8), (7, 8), (7, 8), None, None, False, None),
    ("batch_heads", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), None, None, False, None),
    ("dv_ne_dk", (2, 5, 8), (2, 7, 8), (2, 7, 3), None, None, False, None),
    ("broadcast_lead_dims", (2, 1, 5, 8), (1, 3, 7, 8), (1, 3, 7, 4), None, None, False, None),
    ("bool_mask_full", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), "bool", (2, 3, 5, 7), False, None),
    ("bool_mask_broadcast", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6), "bool", (2, 1, 5, 7), False, None),
    ("bool_mask_2d", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), "bool", (5, 7), False, None),
    ("float_mask", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), "float", (2, 3, 5, 7), False, None),
    ("float_mask_broadcast", (4, 6, 8), (4, 6, 8), (4, 6, 2), "float", (1, 6, 6), False, None),
    ("causal_square", (2, 6, 8), (2, 6, 8), (2, 6, 8), None, None, True, None),
    ("causal_L_lt_S", (2, 3, 4, 8), (2, 3, 9, 8), (2, 3, 9, 5), None, None, True, None),
    ("causal_L_gt_S", (2, 3, 9, 8), (2, 3, 4, 8), (2, 3, 4, 5), None, None, True, None),
    ("scale_small", (2, 5, 8), (2, 7, 8), (2, 7, 8), None, None, False, 0.05),
    ("scale_large", (2, 5, 8), (2, 7, 8), (2, 7, 8), "bool", (2, 5, 7), False, 2.5),
    ("scale_with_causal", (2, 7, 16), (2, 5, 16), (2, 5, 4), None, None, True, 0.3),
]


def case_inputs(case: tuple, device: torch.device | str, seed: int, dtype: torch.dtype = torch.float32):
    _, q_shape, k_shape, v_shape, mask_kind, mask_shape, is_causal, scale = case
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (randn(gen, *shape, device=device).to(dtype) for shape in (q_shape, k_shape, v_shape))
    mask = make_mask(mask_kind, mask_shape, gen, device) if mask_kind else None
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.to(dtype)
    return q, k, v, mask, is_causal, scale


def case_id(case: tuple) -> str:
    return case[0]


# ---------------------------------------------------------------- agreement with torch and float64


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_matches_torch_sdpa(case: tuple, device: torch.device) -> None:
    q, k, v, mask, is_causal, scale = case_inputs(case, device, seed=len(case[0]))
    expected = F.scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal, scale=scale)
    ours = scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal, scale=scale)
    assert ours.shape == expected.shape
    if device.type == "cpu":  # here torch's kernel and ours agree to float32's default tolerance
        torch.testing.assert_close(ours, expected)
        torch.testing.assert_close(attention_trace(q, k, v, mask, 0.0, is_causal, scale=scale).output, expected)
    # on every device, both pass FlashAttention's rule against float64, so they agree within it
    for out in (ours, expected):
        check = flash_rule(out, q, k, v, mask, is_causal, scale=scale)
        assert check.passes, check.describe()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_matches_float64_reference(case: tuple, device: torch.device) -> None:
    q, k, v, mask, is_causal, scale = case_inputs(case, device, seed=100 + len(case[0]))
    ref_w, ref_out = reference_attention(q, k, v, mask, is_causal, scale)
    trace = attention_trace(q, k, v, mask, 0.0, is_causal, scale=scale)
    if device.type == "cpu":  # bounds measured on the CPU
        assert max_err(trace.weights, ref_w) < 1e-6
        assert max_err(trace.output, ref_out) < 1e-5
    # FlashAttention's rule on every device: at most 2× the error of standard torch attention, same dtype
    check = flash_rule(trace.output, q, k, v, mask, is_causal, scale=scale)
    assert check.passes, check.describe()
    assert max_err(trace.output, ref_out) <= check.bound  # the rule's float64 agrees with the numpy loops


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_flashattention_acceptance(dtype: torch.dtype, device: torch.device) -> None:
    """FlashAttention's rule: error vs a float64 reference ≤ 2 × the error of standard torch attention
    (softmax(q kᵀ s) v in plain torch ops) in the same dtype on the same device."""
    gen = torch.Generator().manual_seed(7)
    q32, k32 = randn(gen, 2, 4, 24, 16, scale=2.0), randn(gen, 2, 4, 30, 16, scale=2.0)
    v32 = randn(gen, 2, 4, 30, 16)
    mask32 = make_mask("bool", (2, 1, 24, 30), gen, "cpu")
    _, ref = reference_attention(q32, k32, v32, mask32)
    q, k, v, mask = (t.to(device) for t in (q32, k32, v32, mask32))
    q, k, v = (t.to(dtype) for t in (q, k, v))
    ours = scaled_dot_product_attention(q, k, v, mask)
    scores = (q @ k.transpose(-2, -1)) / 4.0  # (2, 4, 24, 30), 1/√16 = 1/4
    base = torch.softmax(scores.masked_fill(~mask, NEG_INF), dim=-1).nan_to_num(0.0) @ v  # (2, 4, 24, 16)
    err_ours, err_base = max_err(ours, ref), max_err(base, ref)
    assert err_base > 0
    assert err_ours <= 2 * err_base, f"ours {err_ours:.3g} vs baseline {err_base:.3g}"
    check = flash_rule(ours, q, k, v, mask)  # the helper the other tests use (its float64 is of q, k, v as cast)
    assert check.passes, check.describe()


def test_trace_steps_are_the_five_formulas(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(3)
    q, k, v = randn(gen, 2, 4, 6, device=device), randn(gen, 2, 5, 6, device=device), randn(gen, 2, 5, 3, device=device)
    mask = make_mask("bool", (2, 4, 5), gen, device)
    t = attention_trace(q, k, v, mask, scale=0.7)
    q64, k64 = q.cpu().double().numpy(), k.cpu().double().numpy()
    scores = np.einsum("bie,bje->bij", q64, k64)  # (2, 4, 5)
    assert max_err(t.scores, scores) < 1e-5
    assert max_err(t.scaled, 0.7 * scores) < 1e-5
    assert t.scale == 0.7
    assert torch.isneginf(t.masked[~mask]).all()
    torch.testing.assert_close(t.masked[mask], t.scaled[mask])
    ref_w, ref_out = reference_attention(q, k, v, mask, scale=0.7)
    assert max_err(t.weights, ref_w) < 1e-6
    assert max_err(t.output, ref_out) < 1e-5
    assert t.mask is mask
    assert t.dropout_p == 0.0 and t.dropout_keep is None and t.dropped is t.weights
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.scale = 1.0  # type: ignore[misc]


def test_trace_float_mask_is_added(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(4)
    q, k, v = (randn(gen, 3, 4, device=device) for _ in range(3))
    mask = make_mask("float", (3, 3), gen, device)
    t = attention_trace(q, k, v, mask)
    torch.testing.assert_close(t.masked, t.scaled + mask)
    assert t.scale == pytest.approx(0.5)  # default 1/√E with E = 4


def test_trace_causal_records_the_causal_mask(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(5)
    q, k, v = randn(gen, 3, 4, device=device), randn(gen, 5, 4, device=device), randn(gen, 5, 4, device=device)
    t = attention_trace(q, k, v, is_causal=True)
    assert t.mask is not None
    assert torch.equal(t.mask.cpu(), torch.ones(3, 5, dtype=torch.bool).tril())
    assert attention_trace(q, k, v).mask is None


# ---------------------------------------------------------------- fully masked rows


def test_padding_length_zero_gives_zero_row(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(6)
    q, k, v = randn(gen, 3, 4, 8, device=device), randn(gen, 3, 6, 8, device=device), randn(gen, 3, 6, 5, device=device)
    mask = padding_mask([0, 6, 2], 6, device=device)  # (3, 1, 6): item 0 has no real key
    t = attention_trace(q, k, v, mask)
    assert not torch.isnan(t.weights).any() and not torch.isnan(t.output).any()
    assert torch.equal(t.weights[0], torch.zeros_like(t.weights[0]))
    assert torch.equal(t.output[0], torch.zeros_like(t.output[0]))
    assert t.fully_masked_rows.cpu().tolist() == [[True] * 4, [False] * 4, [False] * 4]
    # torch 2.13's CPU SDPA (and the fused CUDA kernels) also give zeros here; we agree everywhere.
    expected = F.scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(expected[0], torch.zeros_like(expected[0]))
    torch.testing.assert_close(t.output, expected)
    _, ref_out = reference_attention(q, k, v, mask)
    assert max_err(t.output, ref_out) < 1e-5


def test_float_mask_all_neg_inf_row_gives_zeros(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(8)
    q, k, v = randn(gen, 4, 8, device=device), randn(gen, 5, 8, device=device), randn(gen, 5, 3, device=device)
    mask = torch.zeros(4, 5, device=device)
    mask[2] = NEG_INF
    out = scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(out[2], torch.zeros(3, device=device))
    assert torch.isfinite(out).all()
    expected = F.scaled_dot_product_attention(q, k, v, mask)  # torch 2.13 CPU: zeros too
    torch.testing.assert_close(out, expected)


# ---------------------------------------------------------------- stable softmax


def test_stable_softmax_does_not_overflow() -> None:
    x = torch.tensor([[1000.0, 1000.0], [-1000.0, 0.0], [NEG_INF, NEG_INF], [3.0, NEG_INF]])
    w = stable_softmax(x)
    expected = torch.tensor([[0.5, 0.5], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    torch.testing.assert_close(w, expected)


def test_stable_softmax_matches_torch_on_finite_rows() -> None:
    x = torch.randn(4, 7, 5, generator=torch.Generator().manual_seed(9)) * 20
    for dim in (-1, 0, 1):
        torch.testing.assert_close(stable_softmax(x, dim=dim), torch.softmax(x, dim=dim))


@pytest.mark.parametrize(
    "x, match",
    [
        (torch.tensor([1.0, float("nan")]), "NaN or \\+inf"),
        (torch.tensor([1.0, float("inf")]), "NaN or \\+inf"),
        (torch.tensor([1, 2]), "floating dtype"),
        ([1.0, 2.0], "torch.Tensor"),
    ],
)
def test_stable_softmax_rejects(x: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        stable_softmax(x)  # type: ignore[arg-type]


# ---------------------------------------------------------------- hypothesis properties


@st.composite
def attention_case(draw: st.DrawFn, mask_kinds: tuple[str, ...] = ("none", "bool", "float")) -> dict:
    lead = draw(st.sampled_from([(), (2,), (2, 3)]))
    L, S = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    E, Ev = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    magnitude = draw(st.sampled_from([0.1, 1.0, 8.0]))
    kind = draw(st.sampled_from(mask_kinds))
    density = draw(st.floats(0.0, 1.0))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, L, E, generator=gen, dtype=torch.float64) * magnitude
    k = torch.randn(*lead, S, E, generator=gen, dtype=torch.float64) * magnitude
    v = torch.randn(*lead, S, Ev, generator=gen, dtype=torch.float64)
    mask = None
    if kind != "none":
        allowed = torch.rand(*lead, L, S, generator=gen) < density  # density 0 → every row fully masked
        if kind == "bool":
            mask = allowed
        else:
            mask = torch.randn(*lead, L, S, generator=gen, dtype=torch.float64).masked_fill(~allowed, NEG_INF)
    return {"q": q, "k": k, "v": v, "mask": mask, "seed": seed}


def blocked_rows(mask: torch.Tensor | None, shape: torch.Size) -> torch.Tensor:
    """Which query rows have no key at all, read from the mask itself (not from the trace)."""
    if mask is None:
        return torch.zeros(shape[:-1], dtype=torch.bool)
    allowed = mask if mask.dtype == torch.bool else ~torch.isneginf(mask)
    return ~allowed.expand(shape).any(dim=-1)


@PROPS
@given(case=attention_case())
def test_property_rows_sum_to_one_or_zero(case: dict, device: torch.device) -> None:
    q, k, v = (case[n].to(device) for n in "qkv")
    mask = None if case["mask"] is None else case["mask"].to(device)
    w = attention_trace(q, k, v, mask).weights.cpu()
    assert (w >= 0).all()
    sums = w.sum(dim=-1)
    empty = blocked_rows(case["mask"], w.shape)
    torch.testing.assert_close(sums[~empty], torch.ones_like(sums[~empty]))
    assert torch.equal(sums[empty], torch.zeros_like(sums[empty]))
    if case["mask"] is not None:  # a blocked key never gets weight
        blocked = ~case["mask"] if case["mask"].dtype == torch.bool else torch.isneginf(case["mask"])
        assert (w[blocked.expand(w.shape)] == 0).all()


@PROPS
@given(case=attention_case(), data=st.data())
def test_property_permuting_keys_with_values_keeps_output(case: dict, data: st.DataObject, device: torch.device):
    q, k, v, mask = case["q"], case["k"], case["v"], case["mask"]
    perm = torch.tensor(data.draw(st.permutations(range(k.shape[-2]))), dtype=torch.long)
    out = scaled_dot_product_attention(*(t.to(device) for t in (q, k, v)), None if mask is None else mask.to(device))
    k_p, v_p = k[..., perm, :], v[..., perm, :]
    mask_p = None if mask is None else mask[..., perm].to(device)
    out_p = scaled_dot_product_attention(q.to(device), k_p.to(device), v_p.to(device), mask_p)
    torch.testing.assert_close(out_p, out)


@PROPS
@given(case=attention_case(mask_kinds=("none",)), data=st.data())
def test_property_causal_future_never_changes_the_past(case: dict, data: st.DataObject, device: torch.device):
    q, k, v = (case[n].to(device) for n in "qkv")
    L, S = q.shape[-2], k.shape[-2]
    t = data.draw(st.integers(0, L - 1), label="last past query")
    gen = torch.Generator().manual_seed(case["seed"] + 1)
    k2, v2 = k.clone(), v.clone()
    k2[..., t + 1 :, :] = randn(gen, *k2[..., t + 1 :, :].shape, device=device, scale=50.0).double()
    v2[..., t + 1 :, :] = randn(gen, *v2[..., t + 1 :, :].shape, device=device, scale=50.0).double()
    before = attention_trace(q, k, v, is_causal=True)
    after = attention_trace(q, k2, v2, is_causal=True)
    assert torch.equal(after.output[..., : t + 1, :], before.output[..., : t + 1, :])
    assert torch.equal(after.weights[..., : t + 1, :], before.weights[..., : t + 1, :])
    if t + 1 < S:  # the future keys really carry no weight for the past queries
        assert (before.weights[..., : t + 1, t + 1 :] == 0).all()


@PROPS
@given(case=attention_case(), causal=st.booleans(), scale=st.none() | st.floats(0.01, 4.0))
def test_property_agrees_with_torch_sdpa(case: dict, causal: bool, scale: float | None, device: torch.device):
    q, k, v = (case[n].to(device) for n in "qkv")
    mask = None if causal or case["mask"] is None else case["mask"].to(device)
    ours = scaled_dot_product_attention(q, k, v, mask, is_causal=causal, scale=scale)
    expected = F.scaled_dot_product_attention(q, k, v, mask, is_causal=causal, scale=scale)
    torch.testing.assert_close(ours, expected)


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
    ("mask_with_causal", lambda: (_qkv(), {"attn_mask": torch.ones(3, 4, dtype=torch.bool), "is_causal": True}),
     "either attn_mask or is_causal"),
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
    ("S_zero", lambda: (_qkv(S=0), {}), "at least one key"),
    ("L_zero", lambda: (_qkv(L=0), {}), "at least one query"),
    ("dropout_negative", lambda: (_qkv(), {"dropout_p": -0.1}), "dropout_p must be ≥ 0"),
    ("dropout_one", lambda: (_qkv(), {"dropout_p": 1.0}), "dropout_p must be < 1"),
    ("dropout_big", lambda: (_qkv(), {"dropout_p": 1.5}), "dropout_p must be < 1"),
    ("dropout_nan", lambda: (_qkv(), {"dropout_p": float("nan")}), "dropout_p must be finite"),
    ("dropout_text", lambda: (_qkv(), {"dropout_p": "lots"}), "dropout_p must be a real number"),
    ("scale_zero", lambda: (_qkv(), {"scale": 0.0}), "scale must be > 0"),
    ("scale_negative", lambda: (_qkv(), {"scale": -0.5}), "scale must be > 0"),
    ("scale_inf", lambda: (_qkv(), {"scale": float("inf")}), "scale must be finite"),
    ("scale_nan", lambda: (_qkv(), {"scale": float("nan")}), "scale must be finite"),
    ("fp16_overflow", lambda: ((torch.full((1, 2, 4), 300.0, dtype=torch.float16),) * 3, {}), "overflowed"),
]


@pytest.mark.parametrize("fn", [scaled_dot_product_attention, attention_trace], ids=["sdpa", "trace"])
@pytest.mark.parametrize("make, match", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_validation_errors(fn, make, match: str) -> None:
    args, kwargs = make()
    with pytest.raises(ValueError, match=match):
        fn(*args, **kwargs)


def test_validation_accepts_the_edges() -> None:
    """The boundaries that must stay legal: dropout 0, a tiny positive scale, a 1×1 problem."""
    q, k, v = _qkv(L=1, S=1, E=1, Ev=1)
    assert scaled_dot_product_attention(q, k, v, dropout_p=0.0, scale=1e-6).shape == (2, 1, 1)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v), v)  # one key takes all the weight


def test_mask_on_another_device_is_rejected() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA to put the mask elsewhere")
    q, k, v = (t.cuda() for t in _qkv())
    with pytest.raises(ValueError, match="attn_mask is on cpu but q is on cuda"):
        scaled_dot_product_attention(q, k, v, torch.ones(3, 4, dtype=torch.bool))


# ---------------------------------------------------------------- dropout


def _dropout_inputs(device: torch.device):
    gen = torch.Generator().manual_seed(12)
    q, k, v = randn(gen, 4, 6, device=device), randn(gen, 5, 6, device=device), randn(gen, 5, 3, device=device)
    return q, k, v


def test_dropout_drops_and_rescales(device: torch.device) -> None:
    q, k, v = _dropout_inputs(device)
    p = 0.4
    t = attention_trace(q, k, v, dropout_p=p, generator=torch.Generator(device=device).manual_seed(1))
    assert t.dropout_p == p
    assert t.dropout_keep is not None and t.dropout_keep.dtype == torch.bool
    assert t.dropout_keep.shape == t.weights.shape
    torch.testing.assert_close(t.dropped, t.weights * t.dropout_keep / (1 - p))
    torch.testing.assert_close(t.output, t.dropped @ v)
    clean = attention_trace(q, k, v)
    torch.testing.assert_close(t.weights, clean.weights)  # dropout comes after the softmax
    again = attention_trace(q, k, v, dropout_p=p, generator=torch.Generator(device=device).manual_seed(1))
    assert torch.equal(again.dropout_keep, t.dropout_keep)  # a seed gives the same picture


def test_dropout_keep_rate_and_expectation(device: torch.device) -> None:
    """Over many independent draws, the mean output approaches the dropout-free output."""
    q, k, v = _dropout_inputs(device)
    p, draws = 0.3, 4000
    gen = torch.Generator(device=device).manual_seed(2)
    # a broadcast batch of identical problems: one independent dropout pattern per draw
    t = attention_trace(q.expand(draws, *q.shape), k, v, dropout_p=p, generator=gen)
    assert t.dropout_keep is not None
    n = t.dropout_keep.numel()
    keep_rate = t.dropout_keep.double().mean().item()
    assert abs(keep_rate - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    expected = scaled_dot_product_attention(q, k, v).double()  # (4, 3)
    outs = t.output.double()  # (draws, 4, 3)
    standard_error = outs.std(dim=0) / math.sqrt(draws)
    assert ((outs.mean(dim=0) - expected).abs() <= 5 * standard_error + 1e-6).all()
    # and without the 1/(1−p) rescaling the mean would be visibly off: the test can tell
    assert ((outs.mean(dim=0) * (1 - p) - expected).abs() > 5 * standard_error).any()


def test_dropout_zero_means_no_dropout(device: torch.device) -> None:
    q, k, v = _dropout_inputs(device)
    t = attention_trace(q, k, v, dropout_p=0.0, generator=torch.Generator(device=device).manual_seed(3))
    assert t.dropout_keep is None
    assert t.dropped is t.weights


def test_dropout_keeps_fully_masked_rows_at_zero(device: torch.device) -> None:
    q, k, v = _dropout_inputs(device)
    mask = torch.ones(4, 5, dtype=torch.bool, device=device)
    mask[1] = False
    t = attention_trace(q, k, v, mask, dropout_p=0.5, generator=torch.Generator(device=device).manual_seed(4))
    assert torch.equal(t.output[1], torch.zeros(3, device=device))
    assert torch.isfinite(t.output).all()

