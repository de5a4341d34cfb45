"""The benchmark page's cached wrappers of the core."""

from __future__ import annotations

from typing import Any

import streamlit as st

from attention_core import bench
from ui.benchmark.cloud import cap_ceiling, running_on_streamlit_cloud


def cap_and_free(device: str) -> tuple[int, int | None]:
    """Read every run (two small /proc reads): free memory changes, and so may $ATTENTION_BENCH_CAP_GB."""
    return bench.default_cap_bytes(device, ceiling=cap_ceiling(device)), bench.free_memory_bytes(device)


@st.cache_data(show_spinner=False)
def memory_table(dtype: str, batch: int, heads: int, free: int | None, cap: int, mode: str) -> list[dict[str, Any]]:
    return bench.memory_table(dtype, batch, heads, free_bytes=free, cap_bytes=cap, mode=mode)


@st.cache_data(show_spinner=False)
def flop_table(n: int, d: int, batch: int, heads: int, causal: bool, mode: str) -> list[dict[str, Any]]:
    return bench.flop_table(n, d, batch, heads, causal, mode)


@st.cache_data(show_spinner=False, ttl=30)  # the load average in it moves
def environment(device: str) -> dict[str, str]:
    env = bench.environment(device, cap_bytes=cap_and_free(device)[0])
    return {**env, "Streamlit Community Cloud": "yes" if running_on_streamlit_cloud() else "no"}


@st.cache_data(show_spinner=False, ttl=60)
def plan(impls: tuple[str, ...], ns: tuple[int, ...], d: int, heads: int, batch: int, dtype: str, causal: bool,
         device: str, kv_heads: int | None, mode: str, cap: int) -> list[tuple[str, int, int, str | None]]:  # fmt: skip
    spec = bench.SweepSpec(impls, ns, d=d, heads=heads, batch=batch, dtype=dtype, causal=causal, device=device,
                           kv_heads=kv_heads, mode=mode)  # fmt: skip
    return [(p.config.impl, p.config.n, p.needed_bytes, p.refusal) for p in bench.plan(spec, cap)]
