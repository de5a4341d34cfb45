"""Saturation tab: unscaled rows turn one-hot as d_k grows; a temperature moves a row from one-hot to uniform."""

from __future__ import annotations

import math

import streamlit as st

from figures.scaling import row_bars_figure, saturation_figure, temperature_bars_figure, temperature_figure
from ui.scaling.cached import row_data, rows_for, saturation_data, sweep_data, tau_row_data
from ui.scaling.draw import NUMBER, metrics, numbers, plot, prose, snap
from ui.scaling.settings import TAU_CHOICES, Shared


def saturation_tab(sh: Shared) -> None:
    rows = rows_for(sh.n_keys)
    st.latex(
        r"s_j=\frac{e^{z_j}}{\sum_{l=1}^{n} e^{z_l}},\quad z_j=\frac{q\cdot k_j}{\tau}"
        r"\qquad H(s)=-\sum_{j} s_j\log s_j\;\in\;[\,0,\ \log n\,]"
    )
    with st.spinner("Sampling softmax rows…"):
        table = saturation_data(sh.n_keys, sh.seed)
        row = row_data(sh.d_k, sh.n_keys, sh.seed)
    prose(
        sh.talk,
        f"A row's entropy runs from log n (uniform: each of the n = {sh.n_keys} keys gets 1/n) down to 0 "
        "(one-hot: one key takes everything). Without scaling the scores spread out like √d_k, so rows turn "
        "one-hot as d_k grows; divided by √d_k the spread stays near 1 and the entropy stays put. "
        f"Each point averages {rows} random rows.",
    )
    t = table.loc[table["d_k"] == sh.d_k].iloc[0]
    metrics(
        ("Entropy, unscaled", f"{t['entropy_pct_unscaled']:.0f}%", "of uniform"),
        ("Entropy, ÷√d_k", f"{t['entropy_pct_scaled']:.0f}%", "of uniform"),
        ("Largest weight, unscaled", f"{t['max_weight_unscaled']:.2f}", f"mean over {rows} rows"),
        ("Largest weight, ÷√d_k", f"{t['max_weight_scaled']:.2f}", f"uniform would be {1 / sh.n_keys:.2f}"),
    )
    key = (sh.d_k, sh.n_keys, sh.seed, sh.talk)
    plot(("saturation", *key), lambda: saturation_figure(table, sh.d_k, talk=sh.talk))
    plot(("row", *key), lambda: row_bars_figure(row["unscaled"], row["scaled"], sh.d_k, talk=sh.talk))
    st.subheader("Turn the temperature")
    snap("sc_tau", TAU_CHOICES)
    st.select_slider("Temperature τ (the softmax sees q·k / τ)", options=TAU_CHOICES, key="sc_tau",
                     format_func=lambda x: f"{x:g}",
                     help="τ = 1 is no scaling; τ = √d_k is the Transformer's.")  # fmt: skip
    tau = float(st.session_state["sc_tau"])
    weights, h_pct = tau_row_data(sh.d_k, sh.n_keys, sh.seed, tau)
    sweep = sweep_data(sh.d_k, sh.n_keys, sh.seed)
    prose(
        sh.talk,
        f"Dividing the same scores by a temperature τ moves the row continuously from one-hot (small τ) to "
        f"uniform (large τ). At d_k = {sh.d_k}, √d_k = {math.sqrt(sh.d_k):.3g}: this row has "
        f"{row['entropy_pct_unscaled']:.0f}% of the uniform entropy unscaled and "
        f"{row['entropy_pct_scaled']:.0f}% after ÷√d_k; at τ = {tau:g} it has {h_pct:.0f}%.",
    )
    c = st.columns(2)
    with c[0]:
        plot(("tau_bars", *key, tau), lambda: temperature_bars_figure(weights, tau, talk=sh.talk))
    with c[1]:
        plot(("tau_curve", *key, tau), lambda: temperature_figure(sweep, tau, sh.d_k, talk=sh.talk))
    numbers(table, {
        "d_k": NUMBER("d_k"),
        "entropy_pct_unscaled": NUMBER("entropy % (q·k)", format="%.1f"),
        "entropy_pct_scaled": NUMBER("entropy % (÷√d_k)", format="%.1f"),
        "max_weight_unscaled": NUMBER("max weight (q·k)", format="%.3f"),
        "max_weight_scaled": NUMBER("max weight (÷√d_k)", format="%.3f"),
        "score_var_unscaled": NUMBER("score var (q·k)", format="%.4g"),
        "score_var_scaled": NUMBER("score var (÷√d_k)", format="%.3f"),
        "score_range_unscaled": NUMBER("max − min (q·k)", format="%.3g"),
        "score_range_scaled": NUMBER("max − min (÷√d_k)", format="%.3g"),
    }, f"Means over {rows} rows of {sh.n_keys} keys, seed {sh.seed}. Entropy as % of log {sh.n_keys}.")  # fmt: skip
