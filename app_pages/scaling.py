"""The √d_k explorer: every claim about the scaling is measured live, next to its theory.

The page: the controls above the tabs and the open tab. Each tab's body, and what the tabs share,
is in ``ui/scaling/``.
"""

from __future__ import annotations

import streamlit as st

from ui import links
from ui.frame import talk
from ui.scaling.gradients import gradients_tab
from ui.scaling.initialisation import init_tab
from ui.scaling.saturation import saturation_tab
from ui.scaling.settings import DIMS, Shared
from ui.scaling.stability import stability_tab
from ui.scaling.strategies import strategies_tab
from ui.scaling.training import training_tab
from ui.scaling.variance import variance_tab

TABS = {
    "Variance": variance_tab,
    "Saturation": saturation_tab,
    "Gradients": gradients_tab,
    "Scaling strategies": strategies_tab,
    "Initialisation": init_tab,
    "Numerical stability": stability_tab,
    "Training": training_tab,
}
# Which tabs read the shared controls (the others disable them, so it is clear they do nothing there).
USES_DK = USES_SEED = set(TABS) - {"Numerical stability"}
USES_KEYS = {"Saturation", "Gradients", "Scaling strategies", "Training"}
# Older links named these choices by a code.
OLD_OPTIMIZERS = {"adam": "Adam", "sgd": "SGD"}
OLD_INITS = {"lecun": "1/√d_model", "xavier": "Xavier"}


def short_number(old: str) -> str | None:
    """Older links wrote a float choice in full ("1.0"); its label, and so today's link, is shorter ("1")."""
    try:
        return f"{float(old):g}"
    except ValueError:
        return None


def shared_controls(tab: str) -> Shared:
    """d_k, keys and seed above the tabs; disabled where the open tab does not use them."""
    c = st.columns([3, 2, 1])
    return Shared(
        c[0].select_slider("Key width d_k", DIMS, 512, key="sc_dk", bind="query-params", disabled=tab not in USES_DK,
                           help="The length of each query and key vector."),
        c[1].select_slider("Keys per query n", (2, 4, 8, 16, 32, 64, 128), 16, key="sc_nk", bind="query-params",
                           disabled=tab not in USES_KEYS, help="How many keys each softmax row spreads its weight "
                           "over."),
        c[2].number_input("Seed", 0, 9999, 0, 1, key="sc_seed", bind="query-params", disabled=tab not in USES_SEED,
                          help="Same seed, same random numbers."),
        talk(),
    )  # fmt: skip


def scaling_page() -> None:
    links.upgrade(sc_ln=links.on_off, sc_opt=OLD_OPTIMIZERS, sc_init=OLD_INITS, sc_tau=short_number, sc_lr=short_number)
    if not talk():  # on a projector the tabs say where we are; the room goes to the figure
        st.title("The √d_k explorer")
        st.markdown(
            "Why attention divides its scores by √d_k, measured live: each tab samples random vectors, "
            "computes what the claim predicts, and shows both."
        )
    settings = st.popover("Settings", icon=":material/tune:") if talk() else st.container(border=True)
    tabs = st.tabs(list(TABS), key="sc_tab", bind="query-params", on_change="rerun")
    name, tab = next((n, t) for n, t in zip(TABS, tabs, strict=True) if t.open)
    with settings:  # above the tabs, drawn once the open tab is known
        shared = shared_controls(name)
    with tab:
        try:
            TABS[name](shared)
        except ValueError as exc:
            st.error(f"These settings cannot be computed: {exc}")


scaling_page()
