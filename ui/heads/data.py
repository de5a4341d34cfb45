"""The heads page's cached computations (plain arguments in, numpy and plain values out) and number formats."""

from __future__ import annotations

import time
from dataclasses import dataclass, fields, replace
from typing import Any

import streamlit as st
import torch

from attention_core.kv_cache import DecodeTiming, time_decode_steps
from ui.heads.examples import HeadsExample, heads_example
from ui.runlock import RunLock, server_lock

N_TOKENS = 11  # the sentence preset


@st.cache_data(max_entries=256, show_spinner=False)
def example_data(d_model: int, n_heads: int, n_kv_heads: int, seed: int, causal: bool) -> HeadsExample:
    """The example with its tensors (and lists of them) as numpy arrays, which st.cache_data copies cheaply."""

    def cpu(v: Any) -> Any:
        return v.numpy() if isinstance(v, torch.Tensor) else [cpu(x) for x in v] if isinstance(v, list) else v

    e = heads_example(d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, seed=seed, causal=causal)
    return replace(e, **{f.name: cpu(getattr(e, f.name)) for f in fields(e)})


@dataclass(frozen=True)
class Timing:
    """A live measurement of decoding steps, and the clock time it was taken at."""

    steps: DecodeTiming
    when: str


@st.cache_data(max_entries=32, show_spinner=False, ttl=3600)
def timing_data(t_max: int, d_model: int, run: int) -> Timing:
    """One live measurement per setting (and per press of "Measure again"), shared by every viewer.

    It holds the server's run lock, as the benchmark does: two timings at once would each disturb the other.
    """
    contexts = tuple(t for t in (128, 256, 512, 1024, 2048, 4096, 8192, 16384) if t <= t_max)
    server = server_lock()
    if not server.try_acquire(timeout=RunLock.wait_s, what="a decoding-time measurement"):
        raise ValueError(f"another viewer's measurement kept the server busy for {RunLock.wait_s:.0f} s; "
                         "press Measure again later")  # fmt: skip
    try:
        return Timing(time_decode_steps(contexts, d_model=d_model, n_heads=4), time.strftime("%H:%M:%S"))
    finally:
        server.release()


def fmt_int(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def fmt_tokens(n: int) -> str:
    """A token count for a metric: 487 819 → "488k", 2 400 000 → "2.4M"."""
    if n >= 10**6:
        return f"{n / 10**6:.1f}M"
    return f"{n / 1000:.0f}k" if n >= 10**4 else fmt_int(n)
