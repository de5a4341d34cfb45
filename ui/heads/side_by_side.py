"""The "Heads side by side" tab: every head's weights on the sentence, and where “it” looks."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from attention_core.heads import kv_head_of
from figures.heads import heads_side_by_side
from ui import draw
from ui.frame import talk
from ui.heads.data import example_data
from ui.heads.examples import HeadSettings


def grid_figure(d_model: int, n_heads: int, n_kv_heads: int, seed: int, causal: bool, talk: bool) -> go.Figure:
    """Each head's weights (after the GQA conversion to g K/V heads: with g = h, plain MHA), titled by K/V group."""
    d = example_data(d_model, n_heads, n_kv_heads, seed, causal)
    kv_of = [kv_head_of(i, n_heads, n_kv_heads) for i in range(n_heads)]
    return heads_side_by_side(d.weights_gqa, d.tokens, kv_of, talk=talk)


def heads_tab(sh: HeadSettings) -> None:
    d_model, n_heads, seed, causal = sh.d_model, sh.n_heads, sh.seed, sh.causal
    d = example_data(d_model, n_heads, n_heads, seed, causal)
    st.latex(
        r"\operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_k}}\right)V_i,\qquad "
        r"O = [\operatorname{head}_1;\dots;\operatorname{head}_h]\,W_O"
    )
    if talk():
        st.markdown("**Here the heads differ only by chance:** the projections are random, not trained.")
    else:
        st.markdown(
            f"**What differs between the heads here is chance.** W_Q, W_K and W_V are random (seed {seed}), "
            "not trained, so each head's slice of them is a different random projection and its weights differ "
            "at random. In a trained model the heads specialise (one follows the previous token, one links a "
            "pronoun to its noun); nothing here has learned to."
        )
    fig = draw.figure(grid_figure, d_model, n_heads, n_heads, seed, causal, talk())
    draw.chart(fig, "hd_grid_fig", fit="heads.Heads side by side")
    tokens, it = d.tokens, d.weights_mha[:, d.tokens.index("it")]  # (h, L): each head's row of “it”
    st.markdown(
        "**Where “it” looks, head by head:** "
        + " · ".join(f"head {i}: “{tokens[row.argmax()]}” {row.max():.0%}" for i, row in enumerate(it))
    )
