"""For the test_bench_* files that run sweeps: importing ``_no_matmul_probe`` applies it there (autouse)."""

from __future__ import annotations

import pytest

from attention_core.bench import sweep as sweep_mod


@pytest.fixture(autouse=True)
def _no_matmul_probe(monkeypatch):
    """Sweeps in tests need no matmul rate; measuring it would only cost time."""
    monkeypatch.setattr(sweep_mod, "matmul_peak_gflops", lambda device, dtype: 100.0)
