"""One configuration end to end: run_config's ok row, and failures recorded, never raised.

A CUDA-only or refusing forced kernel is n/a with torch's reason (in the row, the table, the
CLI and the CSV); out of memory is oom and does not stop a sweep; anything else is an error.
"""

from __future__ import annotations

import csv
import io
import warnings

import pytest
import torch
import torch.nn.functional as F
from bench_fixtures import _no_matmul_probe  # noqa: F401  (autouse: the sweeps here skip the matmul-rate probe)
from torch.nn.attention import SDPBackend, sdpa_kernel

from attention_core import bench
from attention_core.bench import (
    IMPLEMENTATIONS,
    NOT_AVAILABLE,
    BenchConfig,
    Impl,
    SweepSpec,
    run_config,
    run_sweep,
    textbook_extra_bytes,
)
from attention_core.bench.cli import main

# ---- one configuration end to end ---------------------------------------------------------


@pytest.mark.parametrize("name", ["textbook", "sdpa", "tiled"])
def test_run_config_records_an_ok_row(device, name):
    config = BenchConfig(name, 64, d=8, heads=2, device=str(device))
    row = run_config(config, min_run_time=0.0, cap_bytes=2**30, peak_gflops=50.0)
    assert row.status == "ok", row.note
    assert row.median_ms > 0 and row.iqr_ms >= 0 and row.samples >= 3
    assert row.gflops == pytest.approx(config.flops() / (row.median_ms / 1e3) / 1e9)
    assert row.pct_of_peak == pytest.approx(100 * row.gflops / 50.0)
    assert row.predicted_bytes > 0 and row.backend
    assert (row.peak_bytes is None) == (row.memory_source == "not measured")


def test_sdpa_reports_the_kernel_that_ran():
    q = torch.randn(1, 2, 32, 16)
    choice = bench.sdpa_choice(q, q, q, False)
    assert choice != "unknown"
    forced = IMPLEMENTATIONS["sdpa-math"].backend((q, q, q), False)
    assert forced == "math"


def test_a_cuda_only_kernel_is_na_on_the_cpu_with_a_reason():
    for name in ("sdpa-efficient", "sdpa-cudnn"):
        row = run_config(BenchConfig(name, 64, d=8, heads=1, device="cpu"), cap_bytes=2**30)
        assert row.status == "n/a"
        assert "CUDA" in row.note and row.median_ms is None


def test_a_forced_kernel_that_refuses_is_na_with_torchs_reason(monkeypatch):
    """Flash on the CPU refuses values whose last dim differs from the keys': n/a, never a fallback."""

    def run(inputs, causal):
        q, k, v = inputs
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v[..., :4], is_causal=causal)

    fake = Impl("fake-flash", "refuses", run, textbook_extra_bytes, lambda i, c: "flash", forced=True)
    monkeypatch.setitem(IMPLEMENTATIONS, "fake-flash", fake)
    row = run_config(BenchConfig("fake-flash", 32, d=8, heads=1), cap_bytes=2**30)
    assert row.status == "n/a"
    assert row.note.startswith(NOT_AVAILABLE + ": ") and "same last dimension" in row.note
    assert "Triggered internally" not in row.note


def _no_kernel(reason: str) -> Impl:
    """A forced backend as torch's CUDA dispatcher refuses one: warnings giving the reason, then
    "No available kernel" (as flash with float32, or cuDNN with a causal mask it cannot take)."""

    def run(inputs, causal):
        warnings.warn(f"{reason} (Triggered internally at sdp_utils.cpp:123.)", UserWarning, stacklevel=1)
        raise RuntimeError("No available kernel. Aborting execution.")

    return Impl("sdpa-nokernel", "refuses", run, textbook_extra_bytes, lambda i, c: "flash", forced=True)


def test_no_available_kernel_shows_as_not_available_in_the_row_the_table_the_cli_and_the_csv(monkeypatch, tmp_path):
    reason = "Flash attention only supports float16 and bfloat16, got float32."
    monkeypatch.setitem(IMPLEMENTATIONS, "sdpa-nokernel", _no_kernel(reason))
    expected = f"{NOT_AVAILABLE}: {reason}"
    row = run_config(BenchConfig("sdpa-nokernel", 32, d=8, heads=1), cap_bytes=2**30)
    assert (row.status, row.note, row.median_ms) == ("n/a", expected, None)

    path, out = tmp_path / "out.csv", io.StringIO()
    argv = ["--impl", "sdpa-nokernel", "tiled", "--n", "16", "--d", "4", "--heads", "1", "--min-run-time", "0"]
    assert main([*argv, "--csv", str(path)], stream=out) == 0
    text = out.getvalue()
    assert expected in text and "error" not in text.lower()
    with path.open(newline="") as fh:
        rows = {r["impl"]: r for r in csv.DictReader(fh)}
    assert rows["sdpa-nokernel"]["status"] == "n/a" and rows["sdpa-nokernel"]["note"] == expected
    assert rows["tiled"]["status"] == "ok"


def test_a_non_forced_implementation_that_raises_is_still_an_error(monkeypatch):
    """Only a forced kernel's refusal is "not available"; anything else is a real error and says so."""
    fake = _no_kernel("whatever")
    monkeypatch.setitem(IMPLEMENTATIONS, "sdpa-nokernel", Impl(**{**fake.__dict__, "forced": False}))
    row = run_config(BenchConfig("sdpa-nokernel", 32, d=8, heads=1), cap_bytes=2**30)
    assert row.status == "error" and row.note == "No available kernel. Aborting execution."


def _raising(exc: BaseException) -> Impl:
    def run(inputs, causal):
        raise exc

    return Impl("fake", "raises", run, textbook_extra_bytes, lambda i, c: "fake")


@pytest.mark.parametrize(
    "exc",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB"),
        MemoryError(),
        RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory"),
    ],
)
def test_an_out_of_memory_error_is_caught_and_recorded(monkeypatch, exc):
    monkeypatch.setitem(IMPLEMENTATIONS, "fake", _raising(exc))
    row = run_config(BenchConfig("fake", 32, d=8, heads=1), cap_bytes=2**30)
    assert row.status == "oom"
    assert row.median_ms is None and row.peak_bytes is None


def test_an_oom_in_a_sweep_does_not_stop_the_others(monkeypatch):
    monkeypatch.setitem(IMPLEMENTATIONS, "fake", _raising(torch.OutOfMemoryError("out of memory")))
    result = run_sweep(SweepSpec(("fake", "tiled"), (32,), d=8, heads=1), min_run_time=0.0, cap_bytes=2**30)
    assert [r.status for r in result.rows] == ["oom", "ok"]


def test_another_runtime_error_is_recorded_as_error(monkeypatch):
    monkeypatch.setitem(IMPLEMENTATIONS, "fake", _raising(RuntimeError("shape '[3]' is invalid\nmore")))
    row = run_config(BenchConfig("fake", 32, d=8, heads=1), cap_bytes=2**30)
    assert row.status == "error" and row.note == "shape '[3]' is invalid"
