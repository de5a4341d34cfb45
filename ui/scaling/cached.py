"""Cached computations: plain arguments in, tables and dataclasses out (the core through thin ``st.cache_data``
wrappers; the toy runs through ``functools.lru_cache``, for every session)."""

from __future__ import annotations

import functools
import math
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
from ui.runlock import Holding, server_lock, wait_turn
from ui.scaling.settings import DIMS, MAG_CHOICES, TAU_CHOICES, THRESHOLD, TOY_D_MODEL, VECTORS, toy_batch


def rows_for(n_keys: int) -> int:
    """Rows per d_k for saturation and gradients (the same rows for both): the cost stays flat in n."""
    return max(32, VECTORS // (n_keys + 1))


@dataclass(frozen=True)
class Both:
    """One quantity without and with ÷√d_k."""

    unscaled: float
    scaled: float


def _by_dk(table: pd.DataFrame, unscaled: str, scaled: str | None = None) -> dict[int, Both]:
    """Column ``unscaled`` beside ``scaled`` (default: the ``<name>_unscaled``, ``<name>_scaled`` pair), by d_k."""
    a, b = (unscaled, scaled) if scaled else (f"{unscaled}_unscaled", f"{unscaled}_scaled")
    return {int(d): Both(float(x), float(y)) for d, x, y in zip(table["d_k"], table[a], table[b], strict=True)}


@dataclass(frozen=True)
class Variance:
    """Var(q·k) at every d_k (``table``: the figure's and the numbers'); by d_k the measured variance and the bound
    95% of the scores stay within, unscaled and ÷√d_k; the largest miss from the theory, and its d_k."""

    table: pd.DataFrame
    var: dict[int, Both]
    p95: dict[int, Both]
    worst_error: float
    worst_d_k: int


@st.cache_data(max_entries=16, show_spinner=False)
def variance_data(n_samples: int, seed: int) -> Variance:
    t = variance_table(DIMS, n_samples, seed, device=DEVICE)
    worst = t.loc[t["rel_error"].abs().idxmax()]
    by_dk = _by_dk(t, "empirical_var", "scaled_var"), _by_dk(t, "abs_p95", "scaled_abs_p95")
    return Variance(t, *by_dk, float(worst["rel_error"]), int(worst["d_k"]))


@st.cache_data(max_entries=64, show_spinner=False)
def histogram_data(d_k: int, n_samples: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    return dot_product_histograms(d_k, n_samples, seed, device=DEVICE)


@dataclass(frozen=True)
class Saturation:
    """Means over random rows at every d_k (``table``); by d_k the entropy (% of log n) and the largest weight."""

    table: pd.DataFrame
    entropy_pct: dict[int, Both]
    max_weight: dict[int, Both]


@st.cache_data(max_entries=32, show_spinner=False)
def saturation_data(n_keys: int, seed: int) -> Saturation:
    t = saturation_table(DIMS, n_keys, seed, n_rows=rows_for(n_keys), device=DEVICE)
    return Saturation(t, _by_dk(t, "entropy_pct"), _by_dk(t, "max_weight"))


@st.cache_data(max_entries=32, show_spinner=False)
def sweep_data(d_k: int, n_keys: int, seed: int) -> pd.DataFrame:
    """Mean entropy and largest weight at each τ of TAU_CHOICES: the temperature figure's curve."""
    return temperature_sweep(d_k, n_keys, TAU_CHOICES, seed, n_rows=rows_for(n_keys), device=DEVICE)


@st.cache_resource(max_entries=128, show_spinner=False)
def row_data(d_k: int, n_keys: int, seed: int) -> RowSample:
    """Kept as the object, never changed: unpickling its tensors on every rerun would cost more than the row."""
    return sample_row(d_k, n_keys, seed, device=DEVICE)


@dataclass(frozen=True)
class Gradients:
    """‖∂L/∂z‖ at every d_k (``table``); by d_k its median and the share of rows passing < 0.01; the first d_k
    where the scaled model's median gradient at q·k is the larger (None: nowhere up to 4096)."""

    table: pd.DataFrame
    median: dict[int, Both]
    dead: dict[int, Both]
    crossing: int | None


@st.cache_data(max_entries=32, show_spinner=False)
def gradient_data(n_keys: int, seed: int) -> Gradients:
    t = gradient_table(DIMS, n_keys, rows_for(n_keys), seed, device=DEVICE)
    above = t.loc[t["grad_qk_median_ratio"] > 1, "d_k"]
    return Gradients(t, _by_dk(t, "grad_median"), _by_dk(t, "dead"), int(above.iloc[0]) if len(above) else None)


@dataclass(frozen=True)
class Strategies:
    """Each divisor on the same rows (``table``), and the temperatures fitted for the target: τ alone, and τ
    after cosine normalisation."""

    table: pd.DataFrame
    learned_tau: float
    cosine_tau: float


@st.cache_data(max_entries=64, show_spinner=False)
def strategies_data(d_k: int, n_keys: int, seed: int, target: int) -> Strategies:
    t = scaling_strategies(d_k, n_keys, seed, n_rows=2 * rows_for(n_keys), target_entropy_pct=float(target),
                           device=DEVICE)  # fmt: skip
    by = t.set_index("strategy")["divisor"]
    return Strategies(t, float(by["learned τ"]), float(by["cosine / τ"]))


@dataclass(frozen=True)
class Init:
    """Each initial std's effect (``table``), and with 1/√d_model the inputs' E[x²] and the ÷√d_k scores' variance."""

    table: pd.DataFrame
    x_var: float
    score_var: float


@st.cache_data(max_entries=64, show_spinner=False)
def init_data(d_model: int, d_k: int, layernorm: bool, seed: int, custom: float) -> Init:
    stds = {**named_init_stds(d_model, d_k), "custom": custom}
    t = init_effects(d_model, d_k, stds, layernorm=layernorm, seed=seed, device=DEVICE)
    lecun = t.set_index("init").loc["1/√d_model"]
    return Init(t, float(lecun["x_var"]), float(lecun["score_var_scaled"]))


@dataclass(frozen=True)
class Overflow:
    """Eight logits through the naive and the stable softmax (``table``; ``cells``, as the numbers show them),
    whether the naive one stayed finite, and the largest error of each as the logits grow (``sweep``)."""

    table: pd.DataFrame
    cells: pd.DataFrame
    finite: bool
    sweep: pd.DataFrame


def _cell(x: float) -> str:
    """A weight or exp value for the overflow table, with ∞ and NaN spelled out."""
    if math.isnan(x):
        return "NaN (∞/∞)"
    if math.isinf(x):
        return "∞ (overflow)" if x > 0 else "−∞"
    return f"{x:.4g}"


@st.cache_data(max_entries=64, show_spinner=False)
def overflow_data(magnitude: int, dtype: str) -> Overflow:
    t = softmax_overflow(overflow_logits(float(magnitude), 8, device=DEVICE), dtype)
    shown = {"logit": "logit", "exp(x)": "exp_naive", "naive": "naive", "max-subtracted": "stable",
             "float64 reference": "reference"}  # fmt: skip
    cells = pd.DataFrame({label: [_cell(x) for x in t[column]] for label, column in shown.items()})
    return Overflow(t, cells, bool(t["naive_finite"].all()), overflow_sweep([float(m) for m in MAG_CHOICES], dtype))


@dataclass(frozen=True)
class RunSummary:
    """Where a toy run started and ended, and the step its loss first fell below ``THRESHOLD`` (NaN: never)."""

    start_loss: float
    end_loss: float
    steps_to_threshold: float
    start_logit_std: float


@dataclass(frozen=True)
class Training:
    """Both toy runs: their histories by name (``runs``, for the figures), the summary table, and each run read."""

    runs: dict[str, pd.DataFrame]
    table: pd.DataFrame
    scaled: RunSummary
    unscaled: RunSummary


@functools.lru_cache(maxsize=48)
def training_runs(d_k: int, n_keys: int, optimizer: str, lr: float, init: str, steps: int, seed: int) -> Training:
    """Both toy runs for these settings; a miss trains them behind a progress bar drawn where it is called.

    A miss waits for the server's run lock first, so a room of viewers trying settings trains one at a time
    (those who only look are not held up). Nothing is cached if the wait ends without a turn.
    """
    server, holding = server_lock(), Holding()
    try:
        if not wait_turn(server, holding):
            st.stop()
        server.describe("a training run")
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
        t = training_summary(runs, THRESHOLD)
        read = [RunSummary(*(float(r[c]) for c in ("start_loss", "end_loss", "steps_to_threshold", "start_logit_std")))
                for _, r in t.set_index("run").loc[["scaled", "unscaled"]].iterrows()]  # fmt: skip
        return Training(runs, t, *read)
    finally:
        if holding.ours:
            server.release()
