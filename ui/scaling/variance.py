"""Variance tab: Var(q·k) grows like d_k, and ÷√d_k brings it back to 1, measured at every width."""

from __future__ import annotations

import math

import streamlit as st

from figures.scaling import histogram_figure, variance_figure
from ui.scaling.cached import histogram_data, variance_data
from ui.scaling.draw import NUMBER, fmt, metrics, numbers, plot, prose, snap
from ui.scaling.refine import await_refinement, refiner
from ui.scaling.settings import DIMS, QUICK_SAMPLES, SAMPLE_CHOICES, Shared


def variance_tab(sh: Shared) -> None:
    st.latex(
        r"\operatorname{Var}(q\cdot k)=\sum_{i=1}^{d_k}\operatorname{Var}(q_i k_i)=d_k"
        r"\qquad\qquad \operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right)=1"
    )
    prose(
        sh.talk,
        "A score q·k adds up d_k products qᵢkᵢ. When the entries are independent with variance 1, each "
        "product has variance 1, so the sum has variance d_k and a typical score grows like √d_k. Below, "
        "random pairs are drawn at every width and the variance of their dot products is measured.",
    )
    snap("sc_ns", SAMPLE_CHOICES)
    line = st.columns([2, 3], vertical_alignment="bottom")  # the slider and, while refining, the note beside it
    line[0].select_slider("Samples per d_k", options=SAMPLE_CHOICES, key="sc_ns", format_func="{:,}".format,
                         help="Random (q, k) pairs drawn at each width; the estimate's error shrinks like "
                         "1/√samples.")  # fmt: skip
    wanted = int(st.session_state["sc_ns"])
    key = (wanted, sh.seed, sh.d_k)
    n = wanted
    refine = wanted > QUICK_SAMPLES and not refiner().ready(key)
    if refine:
        n = QUICK_SAMPLES
        with line[1]:
            await_refinement(key)
    with st.spinner(f"Sampling {n:,} pairs of vectors at each of {len(DIMS)} widths…"):
        table = variance_data(n, sh.seed)
        hist_u, hist_s = histogram_data(sh.d_k, n, sh.seed)
    row = table.loc[table["d_k"] == sh.d_k].iloc[0]
    metrics(
        (f"Var(q·k) at d_k = {sh.d_k}", fmt(row["empirical_var"], 4), f"theory: {sh.d_k}"),
        ("Typical score, ±1σ", f"±{row['empirical_std']:.1f}", f"theory: ±√{sh.d_k} = ±{math.sqrt(sh.d_k):.1f}"),
        ("95% of scores within", f"±{row['abs_p95']:.1f}", "about ±2σ"),
        ("After ÷√d_k, 95% within", f"±{row['scaled_abs_p95']:.2f}", "about ±2, at any d_k"),
    )
    plot(("variance", n, sh.seed, sh.d_k, sh.talk), lambda: variance_figure(table, sh.d_k, talk=sh.talk))
    plot(("histogram", n, sh.seed, sh.d_k, sh.talk), lambda: histogram_figure(hist_u, hist_s, sh.d_k, talk=sh.talk))
    worst = table.loc[table["rel_error"].abs().idxmax()]
    prose(
        sh.talk,
        f"Every measured point lies within {100 * abs(worst['rel_error']):.1f}% of its theory line (the largest "
        f"miss is at d_k = {int(worst['d_k'])}). With fewer samples the points scatter more: the standard error "
        f"of a variance estimate is about √(2/n), {100 * math.sqrt(2 / n):.1f}% here. At d_k = 1 a single "
        "product qk is far from normal (peaked, heavy-tailed); by a few dozen terms the sum looks normal.",
    )
    numbers(table, {
        "d_k": NUMBER("d_k"), "theoretical_var": NUMBER("theory", format="%g"),
        "empirical_var": NUMBER("measured Var(q·k)", format="%.4g"),
        "rel_error": NUMBER("error", format="percent"), "empirical_std": NUMBER("std", format="%.3g"),
        "abs_p95": NUMBER("95% within ±", format="%.3g"), "scaled_var": NUMBER("Var(q·k/√d_k)", format="%.4f"),
        "scaled_abs_p95": NUMBER("scaled 95% within ±", format="%.3f"),
    }, f"{n:,} samples per d_k, seed {sh.seed}.")  # fmt: skip
    if refine:  # only now: on 2 cores a job started earlier would slow the estimate it replaces
        refiner().start(key)
