"""Beyond n²: the efficient-attention routes, what each skips, how far its output moves, and what it costs here."""

from __future__ import annotations

import streamlit as st

from ui import draw
from ui.efficient.accuracy import accuracy_tab
from ui.efficient.approx import approx_tab
from ui.efficient.cost import cost_tab
from ui.efficient.patterns import patterns_tab
from ui.frame import talk

TABS = {"Sparse patterns": patterns_tab, "Kernels & low rank": approx_tab, "Accuracy": accuracy_tab, "Cost": cost_tab}


INTRO = (
    "Exact attention compares every query with every key: n² scores. The ways out trade exactness for speed. "
    "**Sparse** patterns (Longformer, BigBird) compute only some of the scores; **kernel** methods (linear "
    "attention, the Performer) and **low rank** (Linformer) never form the n × n matrix at all. "
    "FlashAttention, on the Benchmark page, is the exact route. Each tab shows one side: what a route skips, "
    "how far its output moves from exact attention, and from which n it pays off on this machine."
)


def efficient_page() -> None:
    if not talk():
        st.title("Beyond n²: attention that skips work")
    draw.prose(INTRO)
    tabs = st.tabs(list(TABS), key="ef_tab", bind="query-params", on_change="rerun")
    name, tab = next((name, tab) for name, tab in zip(TABS, tabs, strict=True) if tab.open)
    with tab:
        try:
            TABS[name]()
        except ValueError as exc:
            st.error(f"These settings cannot be computed: {exc}")


efficient_page()
