"""The benchmark with fewer K/V heads than query heads (``--kv-heads``: GQA and MQA)."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from attention_core.bench import (
    EXACT,
    IMPLEMENTATIONS,
    BenchConfig,
    SweepSpec,
    correctness_error,
    get_impl,
    main,
    make_inputs,
    measure_peak_extra,
    run_config,
)

LINUX_PEAK = pytest.mark.skipif(not sys.platform.startswith("linux") or not Path("/proc/self/clear_refs").exists(),
                                reason="peak RSS is measured on Linux only")  # fmt: skip


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 2), (4, 1)])
def test_every_implementation_computes_gqa_like_torch(device, name, heads, kv_heads):
    impl = IMPLEMENTATIONS[name]
    if impl.not_here(device, torch.float32):
        pytest.skip(impl.not_here(device, torch.float32))
    config = BenchConfig(name, 48, d=8, heads=heads, kv_heads=kv_heads, batch=2, causal=True, device=str(device))
    q, k, v = make_inputs(config)
    assert q.shape == (2, heads, 48, 8) and k.shape == v.shape == (2, kv_heads, 48, 8)
    try:
        out = torch.as_tensor(impl.run(impl.prepare(q, k, v), True))
    except RuntimeError as exc:  # a forced kernel that cannot share K/V heads refuses; run_config reports n/a
        assert impl.forced, exc
        row = run_config(config, min_run_time=0.0, cap_bytes=2**30)
        assert row.status == "n/a" and row.note
        return
    expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True, enable_gqa=True)
    torch.testing.assert_close(out.double().to(expected.device), expected, atol=1e-5, rtol=1e-4)
    assert correctness_error(config) < 1e-5  # the correctness column's float64 reference repeats K/V itself


def test_the_config_validates_and_counts_the_smaller_inputs():
    c = BenchConfig("sdpa", 64, d=16, heads=8, kv_heads=2)
    assert c.grouped and c.input_bytes() == (8 + 2 + 2) * 64 * 16 * 4
    assert BenchConfig("sdpa", 64, d=16, heads=8).kv_heads == 8
    with pytest.raises(ValueError, match="must divide n_heads"):
        BenchConfig("sdpa", 64, heads=8, kv_heads=3)
    with pytest.raises(ValueError, match="cannot exceed"):
        BenchConfig("sdpa", 64, heads=2, kv_heads=4)


def test_paths_that_repeat_kv_say_so_and_count_the_copies():
    gqa, mha = BenchConfig("textbook", 256, d=32, heads=8, kv_heads=2), BenchConfig("textbook", 256, d=32, heads=8)
    copies = 2 * 8 * 256 * 32 * 4  # K and V repeated to 8 heads
    for name in ("textbook", "tiled", "numpy", "sdpa-math"):
        impl = get_impl(name)
        assert (
            impl.extra_bytes(BenchConfig(name, 256, d=32, heads=8, kv_heads=2))
            - impl.extra_bytes(BenchConfig(name, 256, d=32, heads=8))
            == copies
        )
    inputs = make_inputs(gqa)
    assert "repeated 4×" in get_impl("textbook").backend(inputs, False)
    assert "repeated" not in get_impl("textbook").backend(make_inputs(mha), False)


@LINUX_PEAK
def test_sdpa_shares_kv_heads_without_copying_them():
    """Why the SDPA entries' memory model adds nothing for GQA (the repeating paths' copies are
    counted in test_paths_that_repeat_kv_say_so_and_count_the_copies)."""
    row = run_config(BenchConfig("sdpa", 512, d=64, heads=8, kv_heads=2), min_run_time=0.0, cap_bytes=2**32)
    assert row.status == "ok" and row.kv_heads == 2
    # torch's CPU kernel shares K/V heads without copying them: its peak is about the output, far
    # below the output plus the repeated K and V (3 × q's size) that a repeating path needs
    q, k, v = make_inputs(BenchConfig("sdpa", 2048, d=64, heads=8, kv_heads=1))
    F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # warm-up: thread pools, first allocations
    peak, _ = measure_peak_extra(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    # 20 runs in one process, random benchmark calls in between, measured 1.298–1.300 × q.nbytes
    assert peak is not None and peak < 2 * q.nbytes


def test_the_cli_takes_kv_heads_and_writes_them_to_the_csv(tmp_path):
    path = tmp_path / "gqa.csv"
    out = io.StringIO()
    argv = ["--impl", "textbook", "sdpa", "--n", "32", "--d", "8", "--heads", "4", "--kv-heads", "2", "--device", "cpu"]
    assert main([*argv, "--min-run-time", "0", "--quiet", "--csv", str(path)], stream=out) == 0
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["kv_heads"] for r in rows} == {"2"} and {r["status"] for r in rows} == {"ok"}
    assert "2 K/V heads" in out.getvalue()
    assert main(["--heads", "4", "--kv-heads", "3", "--quiet"], stream=io.StringIO()) == 2


def test_a_spec_passes_kv_heads_to_every_config():
    configs = SweepSpec(("textbook", "sdpa"), (16, 32), d=8, heads=4, kv_heads=1).configs()
    assert {c.kv_heads for c in configs} == {1}
