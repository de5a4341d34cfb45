"""Initialisation tab: √d_k assumes unit-variance q and k, which only the right init and input size give."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from figures.scaling import init_figure
from ui import draw
from ui.draw import NUMBER
from ui.scaling.cached import init_data
from ui.scaling.settings import Shared


def figure(d_model: int, d_k: int, layernorm: bool, seed: int, custom: float, talk: bool) -> go.Figure:
    return init_figure(init_data(d_model, d_k, layernorm, seed, custom), talk=talk)


def init_tab(sh: Shared) -> None:
    st.latex(
        r"q = xW_Q,\ W_Q\sim\mathcal N(0,\sigma^2):\quad \operatorname{Var}(q_i)=d_{model}\,\sigma^2\,"
        r"\mathbb E[x^2]\qquad \operatorname{Var}(q\cdot k)=d_k\operatorname{Var}(q_i)^2"
    )
    c = st.columns([3, 2, 2])
    d_model = c[0].select_slider("Model width d_model", (16, 32, 64, 128, 256, 512, 1024), 512, key="sc_dm",
                                 bind="query-params")
    custom = c[1].number_input("Custom std σ", 0.001, 2.0, 0.1, 0.01, "%.3f", key="sc_std", bind="query-params")
    layernorm = c[2].toggle("LayerNorm the inputs first", False, key="sc_ln", bind="query-params",
                            help="Normalise each token vector to mean 0, variance 1 before the projections.")
    init = init_data(d_model, sh.d_k, layernorm, sh.seed, custom)
    lecun = init.loc["1/√d_model"]
    draw.prose(
        "√d_k assumes q and k have unit-variance entries. That holds only if the projections are initialised "
        "for it and the inputs have unit size. Here 256 token vectors of varying size (gains 0.5 to 4, like a "
        "residual stream) are projected with W_q, W_k drawn at each std.",
        f"With 1/√d_model the queries' variance is E[x²] = {lecun['x_var']:.2f}"
        + (" (LayerNorm has made it 1)" if layernorm else " (the inputs are not normalised)")
        + f", and the ÷√d_k scores have variance {lecun['score_var_scaled']:.3g} rather than 1. "
        "Too small a std flattens every row; too large saturates it even after ÷√d_k."
        + (" Xavier's √(2/(d_model + d_k)) equals 1/√d_model here, since d_model = d_k." if d_model == sh.d_k else ""),
    )
    fig = draw.figure(figure, d_model, sh.d_k, layernorm, sh.seed, custom, sh.talk)
    draw.chart(fig, "sc_init", fit="scaling.Initialisation")
    draw.numbers(init, {
        "init": st.column_config.TextColumn("init"), "std": NUMBER("σ", format="%.4g"),
        "q_var": NUMBER("Var(q)", format="%.4g"), "q_var_theory": NUMBER("theory", format="%.4g"),
        "score_var_unscaled": NUMBER("Var(q·k)", format="%.4g"),
        "score_var_theory": NUMBER("theory", format="%.4g"),
        "score_var_scaled": NUMBER("Var(q·k/√d_k)", format="%.4g"),
        "optimal_divisor": NUMBER("divisor for variance 1", format="%.4g"),
        "entropy_pct_scaled": NUMBER("entropy % (÷√d_k)", format="%.1f"),
    }, f"d_model = {d_model}, d_k = {sh.d_k}, 256 tokens, seed {sh.seed}; "
       f"{'with' if layernorm else 'without'} LayerNorm.", key="sc_init_numbers")  # fmt: skip
