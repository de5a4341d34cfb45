"""Heads: multi-head, grouped-query and multi-query attention, and decoding with a KV cache."""

from __future__ import annotations

import streamlit as st

from ui import urlstate
from ui.heads.calculator import CACHE_DTYPES, GPUS, MODELS, calculator_tab
from ui.heads.common import N_TOKENS, snap
from ui.heads.decode import decode_tab
from ui.heads.examples import D_MODELS
from ui.heads.gqa import gqa_tab
from ui.heads.side_by_side import heads_tab
from ui.heads.split import split_tab
from ui.params import BoolParam, ChoiceParam, IntParam

TABS = ("Split", "Heads side by side", "MHA → GQA → MQA", "KV-cache calculator", "Decode")
HEAD_CHOICES = (1, 2, 4, 8)

PARAMS = [
    ChoiceParam("hd_tab", TABS[0], TABS, label="tab"),
    IntParam("hd_dm", 32, 16, 64, label="d_model"),
    IntParam("hd_h", 4, 1, 8, label="heads"),
    IntParam("hd_kv", 2, 1, 8, label="K/V heads"),
    IntParam("hd_seed", 0, 0, 9999, label="seed"),
    BoolParam("hd_causal", False, label="causal"),
    ChoiceParam("hd_model", "Llama-3-8B", MODELS, label="model"),
    IntParam("hd_ctx", 8192, 1024, 131072, label="context"),
    IntParam("hd_batch", 1, 1, 256, label="batch"),
    ChoiceParam("hd_dtype", "float16", CACHE_DTYPES, label="cache dtype"),
    ChoiceParam("hd_gpu", "80", tuple(GPUS), label="GPU memory"),
    BoolParam("hd_weights", True, label="count the weights"),
    IntParam("hd_step", 7, 0, N_TOKENS - 1, label="decode step"),
    IntParam("hd_dhead", 0, 0, 7, label="decode head"),
    IntParam("hd_tmax", 8192, 2048, 16384, label="longest context measured"),
    IntParam("hd_tdm", 128, 64, 256, label="d_model measured"),
]
USES_SHARED = {"Split", "Heads side by side", "MHA → GQA → MQA", "Decode"}


# ---------------------------------------------------------------------------------------------
# Controls


def shared_controls(tab: str, talk: bool) -> tuple[int, int, int, bool]:
    """d_model, query heads, seed and the causal mask: above the tabs, disabled where unused.

    In talk mode they fold into a "Settings" popover beside a one-line summary, as on the
    walkthrough, so the figures start higher on a projector.
    """
    snap("hd_dm", D_MODELS)
    snap("hd_h", HEAD_CHOICES)
    off = tab not in USES_SHARED
    s = st.session_state
    if talk:
        top = st.columns([1, 4], vertical_alignment="center")
        box = top[0].popover("Settings", icon=":material/tune:", width="stretch")
        top[1].markdown(
            f"d_model = {s['hd_dm']} · h = {s['hd_h']} heads · seed {s['hd_seed']}"
            + (" · causal" if s["hd_causal"] else "")
            if not off
            else "These settings belong to the other tabs."
        )
    else:
        box = st.container(border=True)
    with box:
        c = [st.container() for _ in range(4)] if talk else st.columns([2, 2, 1, 1.3])
        c[0].select_slider(
            "Model width d_model",
            options=D_MODELS,
            key="hd_dm",
            disabled=off,
            help="The width of each token vector, and of Q, K and V before the split.",
        )
        c[1].select_slider(
            "Query heads h",
            options=HEAD_CHOICES,
            key="hd_h",
            disabled=off,
            help="d_model is cut into h heads of d_k = d_model / h features each.",
        )
        c[2].number_input(
            "Seed",
            min_value=0,
            max_value=9999,
            step=1,
            key="hd_seed",
            disabled=off,
            help="Seeds the word vectors and the random projections.",
        )
        c[3].toggle(
            "Causal mask",
            key="hd_causal",
            disabled=off or tab == "Decode",
            help="Each token sees only itself and earlier tokens, as in a decoder.",
        )
    s = st.session_state
    return int(s["hd_dm"]), int(s["hd_h"]), int(s["hd_seed"]), bool(s["hd_causal"])


# ---------------------------------------------------------------------------------------------
# The page


def heads_page() -> None:
    urlstate.seed(PARAMS)
    talk = urlstate.talk_mode()
    if not talk:  # on a projector the navigation names the page; the figures get the room
        st.title("Heads, shared keys and the KV cache")
        st.markdown(
            "Real models run many heads at once, share keys and values between them, and generate text one "
            "token at a time from a cache. Each tab computes one of these live on the walkthrough's sentence."
        )
    urlstate.notices()
    urlstate.ensure_choice("hd_tab", TABS)
    tab_now = str(st.session_state["hd_tab"])
    d_model, n_heads, seed, causal = shared_controls(tab_now, talk)
    tabs = st.tabs(list(TABS), key="hd_tab", on_change="rerun")
    bodies = {
        "Split": lambda: split_tab(d_model, n_heads, seed, causal, talk),
        "Heads side by side": lambda: heads_tab(d_model, n_heads, seed, causal, talk),
        "MHA → GQA → MQA": lambda: gqa_tab(d_model, n_heads, seed, causal, talk),
        "KV-cache calculator": lambda: calculator_tab(talk),
        "Decode": lambda: decode_tab(d_model, n_heads, seed, talk),
    }
    for name, tab in zip(TABS, tabs, strict=True):
        if tab.open:
            with tab:
                try:
                    bodies[name]()
                except ValueError as exc:
                    st.error(f"These settings cannot be computed: {exc}")
    urlstate.publish(PARAMS)


heads_page()
