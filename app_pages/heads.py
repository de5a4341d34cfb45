"""Heads: multi-head, grouped-query and multi-query attention, and decoding with a KV cache."""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from ui import links
from ui.frame import talk
from ui.heads.calculator import CONTEXTS, calculator_tab
from ui.heads.decode import decode_tab
from ui.heads.examples import D_MODELS
from ui.heads.gqa import gqa_tab
from ui.heads.side_by_side import heads_tab
from ui.heads.split import split_tab

TABS = {
    "Split": split_tab, "Heads side by side": heads_tab, "MHA → GQA → MQA": gqa_tab,
    "KV-cache calculator": calculator_tab, "Decode": decode_tab,
}  # fmt: skip
HEAD_CHOICES = (1, 2, 4, 8)


def shared_controls(box: DeltaGenerator, tab: str) -> dict[str, Any]:
    """d_model, query heads, seed and the causal mask, drawn in ``box`` above the tabs; unused on the calculator.

    In talk mode they fold into a "Settings" popover beside a one-line summary, as on the
    walkthrough, so the figures start higher on a projector.
    """
    off = tab == "KV-cache calculator"
    if talk():
        top = box.columns([1, 4], vertical_alignment="center")
        c = [top[0].popover("Settings", icon=":material/tune:", width="stretch")] * 4
    else:
        c = box.container(border=True).columns([2, 2, 1, 1.3])
    p = {
        "d_model": c[0].select_slider("Model width d_model", D_MODELS, 32, key="hd_dm", bind="query-params",
                                      disabled=off, help="The width of each token vector, and of Q, K and V "
                                      "before the split."),
        "n_heads": c[1].select_slider("Query heads h", HEAD_CHOICES, 4, key="hd_h", bind="query-params",
                                      disabled=off, help="d_model is cut into h heads of d_k = d_model / h "
                                      "features each."),
        "seed": c[2].number_input("Seed", 0, 9999, 0, key="hd_seed", bind="query-params", disabled=off,
                                  help="Seeds the word vectors and the random projections."),
        "causal": c[3].toggle("Causal mask", key="hd_causal", bind="query-params", disabled=off or tab == "Decode",
                              help="Each token sees only itself and earlier tokens, as in a decoder."),
    }  # fmt: skip
    if talk():
        causal = " · causal" if p["causal"] else ""
        top[1].markdown("These settings belong to the other tabs." if off else
                        f"d_model = {p['d_model']} · h = {p['n_heads']} heads · seed {p['seed']}{causal}")  # fmt: skip
    return p


def heads_page() -> None:
    in_k = {str(t): label for label, t in CONTEXTS.items()}  # old links wrote contexts in tokens, today's as shown
    links.upgrade(hd_causal=links.on_off, hd_weights=links.on_off, hd_ctx=in_k, hd_tmax=in_k)
    if not talk():  # on a projector the navigation names the page; the figures get the room
        st.title("Heads, shared keys and the KV cache")
        st.markdown(
            "Real models run many heads at once, share keys and values between them, and generate text one "
            "token at a time from a cache. Each tab computes one of these live on the walkthrough's sentence."
        )
    settings = st.container()  # above the tabs, filled once they have said which one is open
    tabs = st.tabs(list(TABS), key="hd_tab", bind="query-params", on_change="rerun")
    name, tab = next((name, tab) for name, tab in zip(TABS, tabs, strict=True) if tab.open)
    shared = shared_controls(settings, name)
    with tab:
        try:
            TABS[name](**shared)
        except ValueError as exc:
            st.error(f"These settings cannot be computed: {exc}")


heads_page()
