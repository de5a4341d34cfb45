"""Numerical stability tab: a naive softmax overflows to NaN, a max-subtracted one never does."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_core.scaling import overflow_limit
from figures.scaling import overflow_bars_figure, overflow_figure
from ui import draw
from ui.scaling import headline
from ui.scaling.cached import overflow_data, overflow_sweep_data
from ui.scaling.settings import MAG_CHOICES, Shared


def figure(kind: str, magnitude: int, dtype: str, talk: bool) -> go.Figure:
    if kind == "bars":
        return overflow_bars_figure(overflow_data(magnitude, dtype), talk=talk)
    return overflow_figure(overflow_sweep_data(dtype), dtype, overflow_limit(dtype), magnitude, talk=talk)


# The numbers table's columns: label → the overflow table's column.
SHOWN = {"logit": "logit", "exp(x)": "exp_naive", "naive": "naive", "max-subtracted": "stable",
         "float64 reference": "reference"}  # fmt: skip


def _cell(x: float) -> str:
    """A weight or exp value for the overflow table, with ∞ and NaN spelled out."""
    if math.isnan(x):
        return "NaN (∞/∞)"
    if math.isinf(x):
        return "∞ (overflow)" if x > 0 else "−∞"
    return f"{x:.4g}"


def stability_tab(sh: Shared) -> None:
    st.latex(
        r"\operatorname{softmax}(x)_i=\frac{e^{x_i}}{\sum_j e^{x_j}}=\frac{e^{x_i-m}}{\sum_j e^{x_j-m}},"
        r"\qquad m=\max_j x_j"
    )
    c = st.columns([3, 2])
    magnitude = c[0].select_slider("Largest logit (8 logits from −x to +x)", MAG_CHOICES, 100, key="sc_mag",
                                   bind="query-params")  # fmt: skip
    dtype = c[1].radio("Number format", ("float32", "float16"), 1, key="sc_dtype", horizontal=True, bind="query-params")
    limit = overflow_limit(dtype)
    t = overflow_data(magnitude, dtype)
    draw.prose(
        f"The largest {dtype} number is {math.exp(limit):.4g} ≈ e^{limit:.1f}. Past a logit of {limit:.1f}, "
        "exp(x) overflows to ∞, "
        "the sum is ∞ too, and ∞/∞ is **NaN**, *not a number*: an undefined result that then spreads through "
        "every sum it enters. Subtracting the row maximum m first makes every exponent ≤ 0, so nothing "
        "overflows, and the weights are unchanged because the factor e^(−m) cancels.",
        f"Unscaled scores at d_k = {sh.d_k} have a std of about √d_k = {math.sqrt(sh.d_k):.1f}; in float16, a "
        f"single score above {overflow_limit('float16'):.1f} is enough to break a naive softmax.",
    )
    # Side by side under the verdict; in talk mode one under the other, each filling the window (their legends
    # need the width).
    verdict = headline()
    boxes = (st.container(), st.container()) if sh.talk else st.columns(2)
    for box, kind in zip(boxes, ("bars", "curve"), strict=True):
        with box:
            draw.chart(draw.figure(figure, kind, magnitude, dtype, sh.talk), f"sc_overflow_{kind}",
                       fit="scaling.Numerical stability")  # fmt: skip
    with verdict():
        if t["naive"].isna().any():
            st.warning(f"At a largest logit of {magnitude}, exp overflows in {dtype}: the naive softmax returns "
                       "NaN (not a number) where the max-subtracted one still gives the right weights.",
                       icon=":material/warning:")  # fmt: skip
        else:
            st.success(f"At a largest logit of {magnitude}, {dtype} holds every exp(x): both versions agree.",
                       icon=":material/check_circle:")  # fmt: skip
    cells = pd.DataFrame({label: [_cell(x) for x in t[column]] for label, column in SHOWN.items()})
    draw.numbers(cells, {c: st.column_config.TextColumn(c) for c in SHOWN}, "∞ (overflow): exp(x) is larger than "
                 "the format can hold. NaN (∞/∞): not a number, the undefined result of dividing infinity by infinity.",
                 key="sc_stability_numbers")  # fmt: skip
