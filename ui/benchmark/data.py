"""The benchmark page's cached wrappers of the core: plain arguments in, tables ready to show out."""

from __future__ import annotations

import streamlit as st

from attention_core import bench
from ui.benchmark.params import ON_CLOUD, cap_ceiling


def cap_and_free(device: str) -> tuple[int, int | None]:
    """Read every run (two small /proc reads): free memory changes, and so may $ATTENTION_BENCH_CAP_GB."""
    return bench.default_cap_bytes(device, ceiling=cap_ceiling(device)), bench.free_memory_bytes(device)


@st.cache_data(show_spinner=False)
def memory_table(dtype: str, batch: int, heads: int, free: int | None, cap: int, mode: str) -> list[dict]:
    return bench.memory_table(dtype, batch, heads, free_bytes=free, cap_bytes=cap, mode=mode)


@st.cache_data(show_spinner=False)
def flop_table(n: int, d: int, batch: int, heads: int, causal: bool, mode: str) -> list[dict]:
    return [{"step": r["operation"], "formula": r["formula"], "GFLOP": r["flops"] / 1e9, "share": r["share"]}
            for r in bench.flop_table(n, d, batch, heads, causal, mode)]


@st.cache_data(show_spinner=False, ttl=30)  # the load average in it moves
def environment(device: str) -> tuple[tuple[str, str], ...]:
    """What to quote beside a number, as (label, value) lines."""
    env = bench.environment(device, cap_bytes=cap_and_free(device)[0])
    return (*env.items(), ("Streamlit Community Cloud", "yes" if ON_CLOUD else "no"))


@st.cache_data(show_spinner=False, ttl=60)
def plan(spec: bench.SweepSpec, cap: int) -> list[bench.PlannedConfig]:
    return bench.plan(spec, cap)
