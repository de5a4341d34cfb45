"""Initialisation tab: √d_k assumes unit-variance q and k, which only the right init and input size give."""

from __future__ import annotations

import streamlit as st

from figures.scaling import init_figure
from ui.scaling.cached import init_data
from ui.scaling.draw import NUMBER, numbers, plot, prose, snap
from ui.scaling.settings import D_MODEL_CHOICES, Shared


def init_tab(sh: Shared) -> None:
    st.latex(
        r"q = xW_Q,\ W_Q\sim\mathcal N(0,\sigma^2):\quad \operatorname{Var}(q_i)=d_{model}\,\sigma^2\,"
        r"\mathbb E[x^2]\qquad \operatorname{Var}(q\cdot k)=d_k\operatorname{Var}(q_i)^2"
    )
    snap("sc_dm", D_MODEL_CHOICES)
    c = st.columns([3, 2, 2])
    c[0].select_slider("Model width d_model", options=D_MODEL_CHOICES, key="sc_dm")
    c[1].number_input("Custom std σ", min_value=0.001, max_value=2.0, step=0.01, format="%.3f", key="sc_std")
    c[2].toggle("LayerNorm the inputs first", key="sc_ln",
                help="Normalise each token vector to mean 0, variance 1 before the projections.")  # fmt: skip
    s = st.session_state
    d_model, layernorm, custom = int(s["sc_dm"]), bool(s["sc_ln"]), float(s["sc_std"])
    table = init_data(d_model, sh.d_k, layernorm, sh.seed, custom)
    prose(
        sh.talk,
        "√d_k assumes q and k have unit-variance entries. That holds only if the projections are initialised "
        "for it and the inputs have unit size. Here 256 token vectors of varying size (gains 0.5 to 4, like a "
        "residual stream) are projected with W_q, W_k drawn at each std.",
    )
    lecun = table.loc[table["init"] == "1/√d_model"].iloc[0]
    prose(
        sh.talk,
        f"With 1/√d_model the queries' variance is E[x²] = {lecun['x_var']:.2f}"
        + (" (LayerNorm has made it 1)" if layernorm else " (the inputs are not normalised)")
        + f", and the ÷√d_k scores have variance {lecun['score_var_scaled']:.3g} rather than 1. "
        "Too small a std flattens every row; too large saturates it even after ÷√d_k."
        + (" Xavier's √(2/(d_model + d_k)) equals 1/√d_model here, since d_model = d_k." if d_model == sh.d_k else ""),
    )
    plot(("init", d_model, sh.d_k, layernorm, sh.seed, custom, sh.talk), lambda: init_figure(table, talk=sh.talk))
    numbers(table, {
        "init": st.column_config.TextColumn("init"), "std": NUMBER("σ", format="%.4g"),
        "q_var": NUMBER("Var(q)", format="%.4g"), "q_var_theory": NUMBER("theory", format="%.4g"),
        "score_var_unscaled": NUMBER("Var(q·k)", format="%.4g"),
        "score_var_theory": NUMBER("theory", format="%.4g"),
        "score_var_scaled": NUMBER("Var(q·k/√d_k)", format="%.4g"),
        "optimal_divisor": NUMBER("divisor for variance 1", format="%.4g"),
        "entropy_pct_scaled": NUMBER("entropy % (÷√d_k)", format="%.1f"),
    }, f"d_model = {d_model}, d_k = {sh.d_k}, 256 tokens, seed {sh.seed}; "
       f"{'with' if layernorm else 'without'} LayerNorm.")  # fmt: skip
