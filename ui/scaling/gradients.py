"""Gradients tab: a saturated softmax passes no gradient to the scores; its Jacobian on one row."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from figures.scaling import gradient_figure, jacobian_figure
from ui import draw
from ui.draw import NUMBER
from ui.scaling import both, lead
from ui.scaling.cached import gradient_data, row_data, rows_for
from ui.scaling.settings import Shared


def figure(kind: str, panel: int, d_k: int, n_keys: int, seed: int, talk: bool) -> go.Figure:
    if kind == "gradient":
        return gradient_figure(gradient_data(n_keys, seed), panel, d_k, talk=talk)
    row = row_data(d_k, n_keys, seed)
    return jacobian_figure(row.jacobian_unscaled, row.jacobian_scaled, panel, d_k, talk=talk)


def gradients_tab(sh: Shared) -> None:
    st.latex(
        r"\frac{\partial s}{\partial z}=\operatorname{diag}(s)-s\,s^{\top}"
        r"\qquad \frac{\partial L}{\partial z}=\left(\operatorname{diag}(s)-s\,s^{\top}\right)g"
    )
    with st.spinner("Back-propagating through softmax rows…"):
        g = gradient_data(sh.n_keys, sh.seed)
    draw.prose(
        "What reaches the scores is the upstream gradient g times the softmax Jacobian. In a one-hot row "
        "every s_j(1 − s_j) is 0, the Jacobian is all zeros, and the scores learn nothing. Here g is random "
        f"and ‖∂L/∂z‖ is measured with torch.autograd on the same {rows_for(sh.n_keys)} rows per width as the "
        "saturation tab.",
    )
    at, key = g.loc[sh.d_k], (sh.d_k, sh.n_keys, sh.seed, sh.talk)
    lead([draw.figure(figure, "gradient", p, *key) for p in (0, 1)], ["sc_gradient", "sc_gradient_ratio"],
         "scaling.Gradients",
         ("Median ‖∂L/∂z‖, unscaled", draw.fmt(at["grad_median_unscaled"]), None),
         ("Median ‖∂L/∂z‖, ÷√d_k", draw.fmt(at["grad_median_scaled"]), None),
         ("Rows passing < 0.01, unscaled", f"{100 * at['dead_unscaled']:.0f}%", None),
         ("Rows passing < 0.01, ÷√d_k", f"{100 * at['dead_scaled']:.0f}%", None))  # fmt: skip
    above = g.index[g["grad_qk_median_ratio"] > 1]  # where the scaled model's gradient at q·k is the larger
    crossing = f"from d_k = {above[0]} on it is larger" if len(above) else "up to d_k = 4096 it stays smaller"
    draw.prose(
        "The mean hides most of the effect: a few rows that happen not to saturate keep it up, while the "
        "median row gets almost nothing. One honest caveat: at the scores q·k themselves, the scaled model's "
        "gradient is also divided by √d_k (the dotted ratio). So at small d_k the scaled model's raw gradient is "
        f"the smaller one; {crossing}. What scaling buys is a softmax that still passes gradient on every row.",
    )
    st.subheader(f"The Jacobian of one row at d_k = {sh.d_k}")
    draw.prose(
        "Each cell is how much weight s_i moves when logit z_j moves. The same query and keys as the bars on "
        "the saturation tab; where a row is one-hot, the whole matrix is (nearly) zero.",
    )
    draw.panels([draw.figure(figure, "jacobian", p, *key) for p in (0, 1)], ["sc_jacobian", "sc_jacobian_scaled"])
    draw.numbers(g, {
        "d_k": NUMBER("d_k"), **both("jac_diag", "mean s(1−s)", "%.3g"),
        **both("grad_median", "median ‖∂L/∂z‖", "%.3g"), "grad_median_ratio": NUMBER("median ratio", format="%.3g"),
        **both("grad", "mean ‖∂L/∂z‖", "%.3g"), "grad_ratio": NUMBER("mean ratio", format="%.3g"),
        **both("dead", "rows < 0.01", "percent"), "grad_qk_median_ratio": NUMBER("median ratio at q·k", format="%.3g"),
    }, f"{rows_for(sh.n_keys)} rows of {sh.n_keys} keys per d_k; upstream gradient g ~ N(0, I); seed {sh.seed}.",
       key="sc_gradients_numbers")  # fmt: skip
