"""Cached computations of the heads page: plain arguments in, numpy and plain values out."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import streamlit as st

from attention_core.kv_cache import time_decode_steps
from ui.heads.examples import decode_example, example_weights, heads_example


@st.cache_data(max_entries=256, show_spinner=False)
def example_data(d_model: int, n_heads: int, n_kv_heads: int, seed: int, causal: bool) -> dict[str, Any]:
    e = heads_example(d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, seed=seed, causal=causal)
    return {
        "tokens": list(e.tokens),
        "weights_mha": e.weights_mha.numpy(),
        "weights_gqa": e.weights_gqa.numpy(),
        "max_abs_diff": e.max_abs_diff,
        "rel_diff": e.rel_diff,
        "delta_torch": e.delta_torch,
        "params_mha": e.params_mha,
        "params_gqa": e.params_gqa,
        "d_k": e.d_k,
    }


@st.cache_data(max_entries=64, show_spinner=False)
def q_data(d_model: int, n_heads: int, seed: int) -> np.ndarray:
    from attention_core.presets import sentence_example

    x = sentence_example(d_model=d_model, d_k=4, d_v=4, seed=seed, positions=True).x_q  # (L, d_model)
    return (x @ example_weights(d_model, n_heads, seed)[0]).numpy()  # (L, d_model)


@st.cache_data(max_entries=128, show_spinner=False)
def decode_data(d_model: int, n_heads: int, n_kv_heads: int, seed: int) -> dict[str, Any]:
    d = decode_example(d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, seed=seed)
    return {
        "tokens": list(d.tokens),
        "weights": [w.numpy() for w in d.weights],
        "max_abs_diff": d.max_abs_diff,
        "d_k": d.d_k,
    }


@st.cache_data(max_entries=32, show_spinner=False, ttl=3600)
def timing_data(t_max: int, d_model: int, run: int) -> dict[str, Any]:
    """One live measurement per setting (and per press of "Measure again"), shared by every viewer."""
    contexts = tuple(t for t in (128, 256, 512, 1024, 2048, 4096, 8192, 16384) if t <= t_max)
    r = time_decode_steps(contexts, d_model=d_model, n_heads=4)
    return {
        "cached": r.points("cached"),
        "recompute": r.points("recompute"),
        "fits": {k: r.fit(k) for k in ("cached", "recompute")},
        "wall_s": r.wall_s,
        "threads": r.threads,
        "max_abs_diff": r.max_abs_diff,
        "skipped": [c for c, t, u in zip(r.contexts, r.recompute_s, r.cached_s, strict=True) if t is None and u],
        "unfinished": [c for c, t in zip(r.contexts, r.cached_s, strict=True) if t is None],
        "when": time.strftime("%H:%M:%S"),
    }
