"""The benchmark's implementations against the float64 reference, by FlashAttention's rule.

Every registered implementation on every dtype, causal or not; then n_q ≠ n_k with a padding
mask, the numpy baseline, and the 16-bit kernels. A forced kernel with no kernel for the inputs
must show as not available, never as an error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from attention_core import flash_rule, reference_attention
from attention_core.bench import (
    EXACT,
    IMPLEMENTATIONS,
    NOT_AVAILABLE,
    BenchConfig,
    Impl,
    make_inputs,
    run_config,
)


def _runs_here(impl: Impl, device: torch.device, dtype: torch.dtype) -> bool:
    return impl.not_here(device, dtype) is None


# ---- every implementation against the float64 reference -----------------------------------


def _run_or_not_available(impl: Impl, config: BenchConfig, q, k, v):
    """The output, or None when a forced kernel has no kernel for these inputs; then the benchmark
    must say so with torch's reason, never as an error."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch explains a refusal in warnings; run_config records them
            return torch.as_tensor(impl.run(impl.prepare(q, k, v), config.causal))
    except RuntimeError:
        if not impl.forced:
            raise
    row = run_config(config, min_run_time=0.0, cap_bytes=2**30)
    assert row.status == "n/a" and row.note.startswith(NOT_AVAILABLE + ": "), (row.status, row.note)
    return None


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_every_implementation_passes_flashattentions_rule(device, name, causal, dtype):
    """Error against float64 at most 2× that of textbook attention, same dtype, same device."""
    impl = IMPLEMENTATIONS[name]
    config = BenchConfig(name, 96, d=16, heads=3, batch=2, causal=causal, dtype=dtype, device=str(device))
    if not _runs_here(impl, device, config.torch_dtype):
        assert run_config(config, cap_bytes=2**30).status == "n/a"
        return
    q, k, v = make_inputs(config)
    out = _run_or_not_available(impl, config, q, k, v)
    if out is None:
        return
    assert out.shape == (2, 3, 96, 16)
    check = flash_rule(out, q, k, v, is_causal=causal)
    assert check.passes, check.describe()
    if device.type == "cpu" and dtype == "float32":  # and, measured here, close to exact
        ref = reference_attention(q, k, v, is_causal=causal)
        assert float((out.double() - ref).abs().max()) < 1e-5


@pytest.mark.parametrize("name", ["lean", "trace", "sdpa", "sdpa-math", "tiled"])
def test_rectangular_and_masked_inputs_match_torch(device, name):
    """n_q ≠ n_k and a padding mask, through the functions the registry wraps."""
    from attention_core import attention_trace, dot_product_attention, padding_mask, tiled_attention

    fns = {
        "lean": dot_product_attention,
        "trace": lambda *a, **kw: attention_trace(*a, **kw).output,
        "sdpa": F.scaled_dot_product_attention,
        "tiled": tiled_attention,
    }
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(2, 2, 40, 8, generator=gen).to(device)
    k = torch.randn(2, 2, 70, 8, generator=gen).to(device)
    v = torch.randn(2, 2, 70, 8, generator=gen).to(device)
    mask = padding_mask([70, 21], 70, device=device).unsqueeze(1)  # (2, 1, 1, 70)
    ref = dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
    if name == "sdpa-math":
        with sdpa_kernel(SDPBackend.MATH):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    else:
        out = fns[name](q, k, v, attn_mask=mask)
    check = flash_rule(out, q, k, v, mask)
    assert check.passes, check.describe()
    if device.type == "cpu":  # measured here: close to exact as well
        torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)


def test_the_numpy_entry_matches_torch():
    q, k, v = make_inputs(BenchConfig("numpy", 33, d=8, heads=2, causal=True))
    numpy = IMPLEMENTATIONS["numpy"]
    out = numpy.run(numpy.prepare(q, k, v), True)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    np.testing.assert_allclose(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_tiled_and_sdpa_pass_the_acceptance_rule_in_16_bit(device, dtype):
    config = BenchConfig("tiled", 160, d=32, heads=2, dtype=dtype, device=str(device))
    q, k, v = make_inputs(config)
    for name in ("tiled", "sdpa", "textbook"):
        check = flash_rule(IMPLEMENTATIONS[name].run((q, k, v), False), q, k, v)
        assert check.passes, (name, check.describe())
