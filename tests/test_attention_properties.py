"""Hypothesis properties of attention on random shapes, masks and magnitudes.

Rows of the weights sum to 1 (a fully masked row to 0), permuting keys with values keeps
the output, the future never changes the past under the causal mask, and torch agrees.
"""

from __future__ import annotations

import torch
from attention_checks import NEG_INF, randn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attention_core import attention_trace, dot_product_attention

PROPS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


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
    out = dot_product_attention(*(t.to(device) for t in (q, k, v)), None if mask is None else mask.to(device))
    k_p, v_p = k[..., perm, :], v[..., perm, :]
    mask_p = None if mask is None else mask[..., perm].to(device)
    out_p = dot_product_attention(q.to(device), k_p.to(device), v_p.to(device), mask_p)
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
    ours = dot_product_attention(q, k, v, mask, is_causal=causal, scale=scale)
    expected = F.scaled_dot_product_attention(q, k, v, mask, is_causal=causal, scale=scale)
    torch.testing.assert_close(ours, expected)
