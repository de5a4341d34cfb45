"""The "Split" tab: one d_model-wide Q cut into h heads of d_k features."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from figures.heads import split_figure
from ui import draw
from ui.frame import talk
from ui.heads.data import N_TOKENS, example_data
from ui.heads.examples import HeadSettings
from ui.snippets import split_snippet


def q_figure(d_model: int, n_heads: int, seed: int, talk: bool) -> go.Figure:
    d = example_data(d_model, n_heads, n_heads, seed, False)
    return split_figure(d.q, d.tokens, n_heads, talk=talk)


def split_tab(sh: HeadSettings) -> None:
    d_model, n_heads, seed = sh.d_model, sh.n_heads, sh.seed
    d_k = d_model // n_heads
    st.latex(
        rf"Q \in \mathbb{{R}}^{{{N_TOKENS}\times {d_model}}} \longrightarrow "
        rf"Q_1,\dots,Q_{{{n_heads}}} \in \mathbb{{R}}^{{{N_TOKENS}\times {d_k}}},\quad "
        rf"d_k = \tfrac{{{d_model}}}{{{n_heads}}} = {d_k}"
    )
    draw.prose(
        f"Multi-head attention does not make h bigger projections: it cuts the one d_model-wide Q, K and V into "
        f"h slices of d_k = d_model / h features. Each slice is a head with its own scores and its own softmax. "
        f"The cost stays that of one head of width d_model; what changes is that {n_heads} separate weight "
        f"patterns can form. Afterwards the heads' outputs are laid side by side again and W_o mixes them."
    )
    draw.chart(draw.figure(q_figure, d_model, n_heads, seed, talk()), "hd_split_fig", fit="heads.Split")
    st.markdown("**The split in code, with the shapes of these settings** (nanoGPT's habit: a shape after each line)")
    st.code(split_snippet(N_TOKENS, d_model, n_heads), language="python")
