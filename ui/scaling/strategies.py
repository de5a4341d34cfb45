"""Scaling strategies tab: other divisors, a learned temperature and cosine attention, on the same rows."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from figures.scaling import strategies_figure
from ui import draw
from ui.draw import NUMBER
from ui.scaling.cached import rows_for, strategies_data
from ui.scaling.settings import Shared


def figure(column: str, d_k: int, n_keys: int, seed: int, target: int, talk: bool) -> go.Figure:
    return strategies_figure(strategies_data(d_k, n_keys, seed, target), column, talk=talk)


def strategies_tab(sh: Shared) -> None:
    rows = rows_for(sh.n_keys)
    st.latex(
        r"s=\operatorname{softmax}\!\left(\frac{q\cdot k}{c}\right),\quad "
        r"c\in\{1,\ \sqrt{d_k},\ d_k,\ d_k^{1/4},\ 2\sqrt{d_k},\ \tau\}"
        r"\qquad s=\operatorname{softmax}\!\left(\frac{\hat q\cdot\hat k}{\tau}\right),"
        r"\ \hat q=\frac{q}{\lVert q\rVert}"
    )
    target = st.slider("Entropy the learned temperatures aim for (% of uniform)", 10, 90, 50, 5, key="sc_target",
                       bind="query-params", help="τ is fitted by gradient descent until the mean row entropy "
                       "reaches this.")  # fmt: skip
    with st.spinner("Fitting the temperatures…"):
        s = strategies_data(sh.d_k, sh.n_keys, sh.seed, target)
    draw.prose(
        f"Each divisor is tried on the same {rows} random rows at d_k = {sh.d_k}. ÷d_k flattens the rows to "
        "near-uniform, ÷d_k^¼ leaves them peaked; ÷√d_k is the one that keeps the score variance at 1 at every width.",
        f"**How τ was learned.** Starting from τ = 1 (no scaling), 150 Adam steps on log τ minimise "
        f"(mean entropy / log n − {target}%)² over {rows} other rows; the table measures the result on fresh rows. "
        f"Here τ = {s.loc['learned τ', 'divisor']:.3g}, against √d_k = {math.sqrt(sh.d_k):.3g}: the temperature a "
        f"target asks for is of the order of √d_k, and which one is 'right' depends on the target. Cosine attention "
        f"normalises q and k first, so its scores lie in [−1, 1] and need a small τ "
        f"({s.loc['cosine / τ', 'divisor']:.3g} here) to be anything but uniform.",
    )
    figs = [draw.figure(figure, c, sh.d_k, sh.n_keys, sh.seed, target, sh.talk) for c in ("entropy_pct", "max_weight")]
    draw.panels(figs, ["sc_strategies", "sc_strategies_max_weight"], "scaling.Scaling strategies")
    draw.numbers(s, {
        "strategy": st.column_config.TextColumn("strategy"),
        "divisor": NUMBER("divisor", format="%.4g"),
        "score_var": NUMBER("score var", format="%.4g"),
        "score_range": NUMBER("max − min", format="%.3g"),
        "entropy_pct": NUMBER("entropy %", format="%.1f"),
        "max_weight": NUMBER("max weight", format="%.3f"),
        "how": st.column_config.TextColumn("how", width="large"),
    }, f"d_k = {sh.d_k}, {sh.n_keys} keys, seed {sh.seed}; measured on rows the fit never saw.",
       key="sc_strategies_numbers")  # fmt: skip
