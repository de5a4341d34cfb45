"""Cached computations: plain arguments in, tables and dataclasses out (the core through thin ``st.cache_data``
wrappers; the toy runs through ``functools.lru_cache``, for every session). A table a tab reads one row of comes
indexed by that row's name (d_k, strategy, init, run), the column kept for the figures and the numbers."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from attention_core.scaling import (
    RowSample,
    dot_product_histograms,
    gradient_table,
    init_effects,
    named_init_stds,
    overflow_logits,
    overflow_sweep,
    sample_row,
    saturation_table,
    scaling_strategies,
    softmax_overflow,
    temperature_sweep,
    train_toy,
    training_summary,
    variance_table,
)
from ui.device import DEVICE
from ui.runlock import turn
from ui.scaling.settings import DIMS, MAG_CHOICES, TAU_CHOICES, THRESHOLD, TOY_D_MODEL, VECTORS, toy_batch


def rows_for(n_keys: int) -> int:
    """Rows per d_k for saturation and gradients (the same rows for both): the cost stays flat in n."""
    return max(32, VECTORS // (n_keys + 1))


@st.cache_data(max_entries=16, show_spinner=False)
def variance_data(n_samples: int, seed: int) -> pd.DataFrame:
    return variance_table(DIMS, n_samples, seed, device=DEVICE).set_index("d_k", drop=False)


@st.cache_data(max_entries=64, show_spinner=False)
def histogram_data(d_k: int, n_samples: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    return dot_product_histograms(d_k, n_samples, seed, device=DEVICE)


@st.cache_data(max_entries=32, show_spinner=False)
def saturation_data(n_keys: int, seed: int) -> pd.DataFrame:
    return saturation_table(DIMS, n_keys, seed, n_rows=rows_for(n_keys), device=DEVICE).set_index("d_k", drop=False)


@st.cache_data(max_entries=32, show_spinner=False)
def sweep_data(d_k: int, n_keys: int, seed: int) -> pd.DataFrame:
    return temperature_sweep(d_k, n_keys, TAU_CHOICES, seed, n_rows=rows_for(n_keys), device=DEVICE)


@st.cache_resource(max_entries=128, show_spinner=False)
def row_data(d_k: int, n_keys: int, seed: int) -> RowSample:
    """Kept as the object, never changed: unpickling its tensors on every rerun would cost more than the row."""
    return sample_row(d_k, n_keys, seed, device=DEVICE)


@st.cache_data(max_entries=32, show_spinner=False)
def gradient_data(n_keys: int, seed: int) -> pd.DataFrame:
    return gradient_table(DIMS, n_keys, rows_for(n_keys), seed, device=DEVICE).set_index("d_k", drop=False)


@st.cache_data(max_entries=64, show_spinner=False)
def strategies_data(d_k: int, n_keys: int, seed: int, target: int) -> pd.DataFrame:
    t = scaling_strategies(d_k, n_keys, seed, n_rows=2 * rows_for(n_keys), target_entropy_pct=float(target),
                           device=DEVICE)  # fmt: skip
    return t.set_index("strategy", drop=False)


@st.cache_data(max_entries=64, show_spinner=False)
def init_data(d_model: int, d_k: int, layernorm: bool, seed: int, custom: float) -> pd.DataFrame:
    stds = {**named_init_stds(d_model, d_k), "custom": custom}
    return init_effects(d_model, d_k, stds, layernorm=layernorm, seed=seed, device=DEVICE).set_index("init", drop=False)


@st.cache_data(max_entries=64, show_spinner=False)
def overflow_data(magnitude: int, dtype: str) -> pd.DataFrame:
    return softmax_overflow(overflow_logits(float(magnitude), 8, device=DEVICE), dtype)


@st.cache_data(max_entries=4, show_spinner=False)
def overflow_sweep_data(dtype: str) -> pd.DataFrame:
    return overflow_sweep([float(m) for m in MAG_CHOICES], dtype)


@dataclass(frozen=True)
class Training:
    """Both toy runs: their histories by name (``runs``, for the figures) and their summary, indexed by run."""

    runs: dict[str, pd.DataFrame]
    table: pd.DataFrame


@functools.lru_cache(maxsize=48)
def training_runs(d_k: int, n_keys: int, optimizer: str, lr: float, init: str, steps: int, seed: int) -> Training:
    """Both toy runs for these settings; a miss trains them behind a progress bar drawn where it is called.

    A miss waits for the server's run lock first, so a room of viewers trying settings trains one at a time
    (those who only look are not held up). Nothing is cached if the wait ends without a turn.
    """
    with turn("a training run") as ours:
        if not ours:
            st.stop()
        bar, every, runs = st.progress(0.0, text="Training…"), max(1, steps // 40), {}
        for i, name in enumerate(("scaled", "unscaled")):

            def tick(step: int, total: int, i: int = i, name: str = name) -> None:
                if step % every == 0 or step == total:
                    bar.progress((i + step / total) / 2, text=f"Training the {name} model: step {step}/{total}")

            runs[name] = train_toy(name == "scaled", d_k, d_model=TOY_D_MODEL, n_keys=n_keys, batch=toy_batch(n_keys),
                                   steps=steps, optimizer=optimizer.lower(), lr=lr,
                                   init_std=named_init_stds(TOY_D_MODEL, d_k)[init], seed=seed, progress=tick,
                                   device=DEVICE)  # fmt: skip
        bar.empty()
        return Training(runs, training_summary(runs, THRESHOLD).set_index("run", drop=False))
