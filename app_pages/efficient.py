"""Beyond n²: the efficient-attention routes, what each skips, how far its output moves, and what it costs here."""

from __future__ import annotations

from ui.efficient.accuracy import accuracy_tab
from ui.efficient.approx import approx_tab
from ui.efficient.cost import cost_tab
from ui.efficient.patterns import patterns_tab
from ui.page import tabbed_page

TABS = {"Sparse patterns": patterns_tab, "Kernels & low rank": approx_tab, "Accuracy": accuracy_tab, "Cost": cost_tab}
INTRO = (
    "Exact attention compares every query with every key: n² scores. The ways out trade exactness for speed. "
    "**Sparse** patterns (Longformer, BigBird) compute only some of the scores; **kernel** methods (linear "
    "attention, the Performer) and **low rank** (Linformer) never form the n × n matrix at all. "
    "FlashAttention, on the Benchmark page, is the exact route. Each tab shows one side: what a route skips, "
    "how far its output moves from exact attention, and from which n it pays off on this machine."
)

tabbed_page(TABS, key="ef_tab", title="Beyond n²: attention that skips work", intro=INTRO)
