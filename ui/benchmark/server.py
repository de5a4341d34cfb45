"""The benchmark rows this server has measured, kept per configuration and shared by every session.

Asking again for a sweep that was already measured here returns at once. The run lock that
keeps two measurements apart is :mod:`ui.runlock`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from attention_core import bench

KEPT_STATUSES = ("ok", "n/a", "oom")  # a skip depends on the cap and the budget, a cancel on the viewer


@dataclass
class ResultStore:
    """Finished rows by configuration, and the matmul peak per (device, dtype)."""

    rows: dict[bench.BenchConfig, bench.BenchResult] = field(default_factory=dict)
    peaks: dict[tuple[str, str], float] = field(default_factory=dict)  # (device, dtype) -> matmul GFLOP/s

    def remember(self, row: bench.BenchResult) -> None:
        """Keep a finished row for reuse, unless it only says the run was cut short."""
        if row.status in KEPT_STATUSES:
            self.rows[_config_of(row)] = row

    def lookup(self, config: bench.BenchConfig) -> bench.BenchResult | None:
        return self.rows.get(config)

    def forget(self) -> None:
        self.rows.clear()


def _config_of(row: bench.BenchResult) -> bench.BenchConfig:
    return bench.BenchConfig(row.impl, row.n, **row.shape())


@st.cache_resource(show_spinner=False)
def results() -> ResultStore:
    """This server's store, shared by every session."""
    return ResultStore()
