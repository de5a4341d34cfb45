"""Saturation tab: unscaled rows turn one-hot as d_k grows; a temperature moves a row from one-hot to uniform."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from attention_core.scaling import entropy_pct
from figures.scaling import (
    SATURATION_PANELS,
    row_bars_figure,
    saturation_figure,
    temperature_bars_figure,
    temperature_figure,
)
from ui import draw
from ui.draw import NUMBER
from ui.scaling import both, lead
from ui.scaling.cached import row_data, rows_for, saturation_data, sweep_data
from ui.scaling.settings import TAU_CHOICES, Shared


def figure(kind: str, d_k: int, n_keys: int, seed: int, talk: bool, tau: float = 0.0) -> go.Figure:
    if kind in SATURATION_PANELS:
        return saturation_figure(saturation_data(n_keys, seed), kind, d_k, talk=talk)
    if kind == "row":
        row = row_data(d_k, n_keys, seed)
        return row_bars_figure(row.weights_unscaled, row.weights_scaled, d_k, talk=talk)
    if kind == "tau_bars":
        return temperature_bars_figure(row_data(d_k, n_keys, seed).weights_at(tau), tau, talk=talk)
    return temperature_figure(sweep_data(d_k, n_keys, seed), tau, d_k, talk=talk)


def saturation_tab(sh: Shared) -> None:
    rows = rows_for(sh.n_keys)
    st.latex(
        r"s_j=\frac{e^{z_j}}{\sum_{l=1}^{n} e^{z_l}},\quad z_j=\frac{q\cdot k_j}{\tau}"
        r"\qquad H(s)=-\sum_{j} s_j\log s_j\;\in\;[\,0,\ \log n\,]"
    )
    with st.spinner("Sampling softmax rows…"):
        s = saturation_data(sh.n_keys, sh.seed)
        row = row_data(sh.d_k, sh.n_keys, sh.seed)
    draw.prose(
        f"A row's entropy runs from log n (uniform: each of the n = {sh.n_keys} keys gets 1/n) down to 0 "
        "(one-hot: one key takes everything). Without scaling the scores spread out like √d_k, so rows turn "
        "one-hot as d_k grows; divided by √d_k the spread stays near 1 and the entropy stays put. "
        f"Each point averages {rows} random rows.",
    )
    at, key = s.loc[sh.d_k], (sh.d_k, sh.n_keys, sh.seed, sh.talk)
    lead([draw.figure(figure, c, *key) for c in SATURATION_PANELS], [f"sc_saturation_{c}" for c in SATURATION_PANELS],
         "scaling.Saturation",
         ("Entropy, unscaled", f"{at['entropy_pct_unscaled']:.0f}%", "of uniform"),
         ("Entropy, ÷√d_k", f"{at['entropy_pct_scaled']:.0f}%", "of uniform"),
         ("Largest weight, unscaled", f"{at['max_weight_unscaled']:.2f}", f"mean over {rows} rows"),
         ("Largest weight, ÷√d_k", f"{at['max_weight_scaled']:.2f}", f"uniform would be {1 / sh.n_keys:.2f}"))
    draw.chart(draw.figure(figure, "row", *key), "sc_row")
    st.subheader("Turn the temperature")
    tau = float(st.select_slider("Temperature τ (the softmax sees q·k / τ)", [f"{t:g}" for t in TAU_CHOICES], "22.6",
                                 key="sc_tau", bind="query-params",
                                 help="τ = 1 is no scaling; τ = √d_k is the Transformer's."))  # fmt: skip
    draw.prose(
        f"Dividing the same scores by a temperature τ moves the row continuously from one-hot (small τ) to "
        f"uniform (large τ). At d_k = {sh.d_k}, √d_k = {math.sqrt(sh.d_k):.3g}: this row has "
        f"{float(entropy_pct(row.weights_unscaled)):.0f}% of the uniform entropy unscaled and "
        f"{float(entropy_pct(row.weights_scaled)):.0f}% after ÷√d_k; at τ = {tau:g} it has "
        f"{float(entropy_pct(row.weights_at(tau))):.0f}%.",
    )
    draw.panels([draw.figure(figure, k, *key, tau) for k in ("tau_bars", "tau_curve")], ["sc_tau_bars", "sc_tau_curve"])
    draw.numbers(s, {
        "d_k": NUMBER("d_k"), **both("entropy_pct", "entropy %", "%.1f"), **both("max_weight", "max weight", "%.3f"),
        **both("score_var", "score var", "%.4g", "%.3f"), **both("score_range", "max − min", "%.3g"),
    }, f"Means over {rows} rows of {sh.n_keys} keys, seed {sh.seed}. Entropy as % of log {sh.n_keys}.",
       key="sc_saturation_numbers")  # fmt: skip
