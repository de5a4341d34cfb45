"""The √d_k explorer: every claim about the scaling is measured live, next to its theory.

The page: its URL parameters, the controls above the tabs and the open tab. Each tab's body, and
what the tabs share, is in ``ui/scaling/``.
"""

from __future__ import annotations

import streamlit as st

from attention_core.scaling import DEFAULT_LR
from ui import urlstate
from ui.params import BoolParam, ChoiceParam, FloatParam, IntParam
from ui.scaling.draw import FIT, flush_metrics, snap
from ui.scaling.gradients import gradients_tab
from ui.scaling.initialisation import init_tab
from ui.scaling.saturation import saturation_tab
from ui.scaling.settings import DIMS, DTYPE_CHOICES, KEY_CHOICES, TRAIN_INITS, Shared
from ui.scaling.stability import stability_tab
from ui.scaling.strategies import strategies_tab
from ui.scaling.training import training_tab
from ui.scaling.variance import variance_tab

TABS = ("Variance", "Saturation", "Gradients", "Scaling strategies", "Initialisation", "Numerical stability",
        "Training")  # fmt: skip

PARAMS = [
    ChoiceParam("sc_tab", TABS[0], TABS, label="tab"),
    IntParam("sc_dk", 512, 1, 4096, label="d_k"),
    IntParam("sc_nk", 16, 2, 128, label="keys"),
    IntParam("sc_seed", 0, 0, 9999, label="seed"),
    IntParam("sc_ns", 20_000, 1_000, 20_000, label="samples"),
    FloatParam("sc_tau", 22.6, 0.25, 4096.0, label="temperature"),
    IntParam("sc_target", 50, 10, 90, label="entropy target"),
    IntParam("sc_dm", 512, 16, 1024, label="d_model"),
    BoolParam("sc_ln", False, label="LayerNorm"),
    FloatParam("sc_std", 0.1, 0.001, 2.0, label="custom std"),
    IntParam("sc_mag", 100, 1, 1000, label="logit size"),
    ChoiceParam("sc_dtype", "float16", DTYPE_CHOICES, label="dtype"),
    ChoiceParam("sc_opt", "adam", tuple(DEFAULT_LR), label="optimizer"),
    FloatParam("sc_lr", DEFAULT_LR["adam"], 0.001, 1.0, label="learning rate"),
    ChoiceParam("sc_init", "lecun", tuple(TRAIN_INITS), label="init"),
    IntParam("sc_steps", 200, 100, 500, label="steps"),
]
# Which tabs read the shared controls (the others disable them, so it is clear they do nothing there).
USES_DK = set(TABS) - {"Numerical stability"}
USES_KEYS = {"Saturation", "Gradients", "Scaling strategies", "Training"}
USES_SEED = set(TABS) - {"Numerical stability"}


def shared_controls(tab: str, talk: bool) -> Shared:
    """d_k, keys and seed above the tabs; disabled where the open tab does not use them."""
    snap("sc_dk", DIMS)
    snap("sc_nk", KEY_CHOICES)
    box = st.popover("Settings", icon=":material/tune:") if talk else st.container(border=True)
    with box:
        c = st.columns([3, 2, 1])
        c[0].select_slider("Key width d_k", options=DIMS, key="sc_dk", disabled=tab not in USES_DK,
                           help="The length of each query and key vector.")  # fmt: skip
        c[1].select_slider("Keys per query n", options=KEY_CHOICES, key="sc_nk", disabled=tab not in USES_KEYS,
                           help="How many keys each softmax row spreads its weight over.")  # fmt: skip
        c[2].number_input("Seed", min_value=0, max_value=9999, step=1, key="sc_seed",
                          disabled=tab not in USES_SEED, help="Same seed, same random numbers.")  # fmt: skip
    s = st.session_state
    return Shared(int(s["sc_dk"]), int(s["sc_nk"]), int(s["sc_seed"]), talk)


TAB_BODIES = {
    "Variance": variance_tab,
    "Saturation": saturation_tab,
    "Gradients": gradients_tab,
    "Scaling strategies": strategies_tab,
    "Initialisation": init_tab,
    "Numerical stability": stability_tab,
    "Training": training_tab,
}


def scaling_page() -> None:
    urlstate.seed(PARAMS)
    talk = urlstate.talk_mode()
    if not talk:  # on a projector the tabs say where we are; the room goes to the figure
        st.title("The √d_k explorer")
    if not talk:
        st.markdown(
            "Why attention divides its scores by √d_k, measured live: each tab samples random vectors, "
            "computes what the claim predicts, and shows both."
        )
    urlstate.notices()
    urlstate.ensure_choice("sc_tab", TABS)
    sh = shared_controls(str(st.session_state["sc_tab"]), talk)
    tabs = st.tabs(list(TABS), key="sc_tab", on_change="rerun")
    for name, tab in zip(TABS, tabs, strict=True):
        if tab.open:
            if talk:  # the metrics wait for the first figure (see metrics and plot in ui/scaling/draw.py)
                st.session_state[FIT] = True
            with tab:
                try:
                    TAB_BODIES[name](sh)
                except ValueError as exc:
                    st.error(f"These settings cannot be computed: {exc}")
                finally:
                    st.session_state.pop(FIT, None)
                    flush_metrics()
    urlstate.publish(PARAMS)


scaling_page()
