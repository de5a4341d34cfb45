"""Watch it learn: an induction head forms in a two-layer, attention-only decoder, live, in seconds."""

from __future__ import annotations

import streamlit as st

from ui import draw
from ui.frame import talk
from ui.induction.ablate import ablate_tab
from ui.induction.sequence import sequence_tab
from ui.induction.train import train_tab

TABS = {"Train": train_tab, "Ablate a head": ablate_tab, "Your sequence": sequence_tab}

INTRO = (
    "A decoder that is nothing but attention, two layers of four heads, reads random tokens followed by the "
    "same tokens again. The first half cannot be predicted; the repeat can, by a two-step algorithm: "
    "**look back for the current token, take the token that followed it, copy it**. A layer-0 head (sometimes "
    "two, sharing the job) learns to look at the previous token; a layer-1 head composes with it into an "
    "**induction head** "
    "(Elhage et al. 2021; Olsson et al. 2022). The repeated half's loss falls suddenly when it forms: a "
    "**phase change**. The page opens on a model trained by this project's own code; press **Train** to watch "
    "it happen again from scratch."
)


def induction_page() -> None:
    if not talk():
        st.title("Watch it learn: an induction head forms")
    draw.prose(INTRO)
    tabs = st.tabs(list(TABS), key="in_tab", bind="query-params", on_change="rerun")
    name, tab = next((name, tab) for name, tab in zip(TABS, tabs, strict=True) if tab.open)
    with tab:
        try:
            TABS[name]()
        except ValueError as exc:
            st.error(f"This cannot be shown: {exc}")


induction_page()
