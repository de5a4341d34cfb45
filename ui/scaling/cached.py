"""Cached computations: plain arguments in, plain tables out (the core through thin ``st.cache_data`` wrappers).

The training tab's toy runs are kept by ``functools.lru_cache`` (for every session): a miss trains
behind a progress bar drawn where it is called, one training at a time on the server (``ui.runlock``,
as for the benchmark), and a hit returns at once.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from attention_core.scaling import (
    dot_product_histograms,
    gradient_table,
    init_effects,
    named_init_stds,
    overflow_logits,
    overflow_sweep,
    row_entropy,
    sample_row,
    saturation_table,
    scaling_strategies,
    softmax_overflow,
    temperature_sweep,
    train_toy,
    variance_table,
)
from ui.device import DEVICE
from ui.runlock import Holding, server_lock, wait_turn
from ui.scaling.settings import DIMS, MAG_CHOICES, TAU_CHOICES, TOY_D_MODEL, VECTORS, toy_batch


def rows_for(n_keys: int) -> int:
    """Rows per d_k for saturation and gradients (the same rows for both): the cost stays flat in n."""
    return max(32, VECTORS // (n_keys + 1))


@st.cache_data(max_entries=16, show_spinner=False)
def variance_data(n_samples: int, seed: int) -> pd.DataFrame:
    return variance_table(DIMS, n_samples, seed, device=DEVICE)


@st.cache_data(max_entries=64, show_spinner=False)
def histogram_data(d_k: int, n_samples: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    return dot_product_histograms(d_k, n_samples, seed, device=DEVICE)


@st.cache_data(max_entries=32, show_spinner=False)
def saturation_data(n_keys: int, seed: int) -> pd.DataFrame:
    return saturation_table(DIMS, n_keys, seed, n_rows=rows_for(n_keys), device=DEVICE)


@st.cache_data(max_entries=32, show_spinner=False)
def sweep_data(d_k: int, n_keys: int, seed: int) -> pd.DataFrame:
    return temperature_sweep(d_k, n_keys, TAU_CHOICES, seed, n_rows=rows_for(n_keys), device=DEVICE)


@dataclass(frozen=True)
class RowReading:
    """One softmax row of ``n_keys`` scores, unscaled and ÷ √d_k: the scores, the weights, their Jacobians
    ``(n, n)``, and the entropy as a percentage of its maximum log n."""

    scores: np.ndarray
    unscaled: np.ndarray
    scaled: np.ndarray
    jac_unscaled: np.ndarray
    jac_scaled: np.ndarray
    entropy_pct_unscaled: float
    entropy_pct_scaled: float


@st.cache_data(max_entries=128, show_spinner=False)
def row_data(d_k: int, n_keys: int, seed: int) -> RowReading:
    r = sample_row(d_k, n_keys, seed, device=DEVICE)
    return RowReading(
        r.scores.cpu().numpy(), r.weights_unscaled.cpu().numpy(), r.weights_scaled.cpu().numpy(),
        r.jacobian_unscaled.cpu().numpy(), r.jacobian_scaled.cpu().numpy(),
        float(100 * row_entropy(r.weights_unscaled) / math.log(n_keys)),
        float(100 * row_entropy(r.weights_scaled) / math.log(n_keys)),
    )  # fmt: skip


@st.cache_data(max_entries=256, show_spinner=False)
def tau_row_data(d_k: int, n_keys: int, seed: int, tau: float) -> tuple[np.ndarray, float]:
    w = sample_row(d_k, n_keys, seed, device=DEVICE).weights_at(tau)
    return w.cpu().numpy(), float(100 * row_entropy(w) / math.log(n_keys))


@st.cache_data(max_entries=32, show_spinner=False)
def gradient_data(n_keys: int, seed: int) -> pd.DataFrame:
    return gradient_table(DIMS, n_keys, rows_for(n_keys), seed, device=DEVICE)


@st.cache_data(max_entries=64, show_spinner=False)
def strategies_data(d_k: int, n_keys: int, seed: int, target: int) -> pd.DataFrame:
    return scaling_strategies(
        d_k, n_keys, seed, n_rows=2 * rows_for(n_keys), target_entropy_pct=float(target), device=DEVICE
    )


@st.cache_data(max_entries=64, show_spinner=False)
def init_data(d_model: int, d_k: int, layernorm: bool, seed: int, custom: float) -> pd.DataFrame:
    stds = {**named_init_stds(d_model, d_k), "custom": custom}
    return init_effects(d_model, d_k, stds, layernorm=layernorm, seed=seed, device=DEVICE)


@st.cache_data(max_entries=64, show_spinner=False)
def overflow_data(magnitude: int, dtype: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = softmax_overflow(overflow_logits(float(magnitude), 8, device=DEVICE), (dtype,))
    return table, overflow_sweep([float(m) for m in MAG_CHOICES], dtype)


@functools.lru_cache(maxsize=48)
def training_runs(
    d_k: int, n_keys: int, optimizer: str, lr: float, init: str, steps: int, seed: int
) -> dict[str, pd.DataFrame]:
    """Both toy runs for these settings, kept for every session; a miss trains them behind a progress bar.

    A miss waits for the server's run lock first, so a room of viewers trying settings trains one at a time
    (those who only look are not held up). Nothing is cached if the wait ends without a turn.
    """
    server, holding = server_lock(), Holding()
    try:
        if not wait_turn(server, holding):
            st.stop()
        server.describe("a training run")
        return _train_both(d_k, n_keys, optimizer, lr, init, steps, seed)
    finally:
        if holding.ours:
            server.release()


def _train_both(
    d_k: int, n_keys: int, optimizer: str, lr: float, init: str, steps: int, seed: int
) -> dict[str, pd.DataFrame]:
    std = named_init_stds(TOY_D_MODEL, d_k)[init]
    bar = st.progress(0.0, text="Training…")
    every = max(1, steps // 40)
    runs = {}
    for i, name in enumerate(("scaled", "unscaled")):

        def tick(step: int, total: int, i: int = i, name: str = name) -> None:
            if step % every == 0 or step == total:
                bar.progress((i * total + step) / (2 * total), text=f"Training the {name} model: step {step}/{total}")

        runs[name] = train_toy(name == "scaled", d_k, d_model=TOY_D_MODEL, n_keys=n_keys, batch=toy_batch(n_keys),
                               steps=steps, optimizer=optimizer.lower(), lr=lr, init_std=std, seed=seed,
                               progress=tick, device=DEVICE)  # fmt: skip
    bar.empty()
    return runs
