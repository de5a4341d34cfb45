"""The five-step walkthrough: every number comes from attention_core's trace."""

from __future__ import annotations

from typing import Any

import streamlit as st

from attention_core.presets import (
    DECODER_HEAD,
    DECODER_LAYER,
    DECODER_MAX_TOKENS,
    MODEL_HEAD,
    MODEL_LAYER,
    MODEL_TEXT,
    PRESETS,
)
from attention_core.walkthrough import MASK_KINDS
from ui import links
from ui.frame import talk
from ui.walkthrough.data import Settings, walkthrough_data
from ui.walkthrough.views import all_view, backward_view, check_panel, compare_view, query_view, steps_view

# Choices are shown, and written in the link, by these names: short, so the link stays readable.
PRESET_NAMES = {"tiny": "Tiny example", "sentence": "Sentence", "random": "Random", "model": "Trained model",
                "decoder": "Gemma decoder"}  # fmt: skip
MASK_NAMES = {"none": "No mask", "causal": "Causal", "padding": "Padding", "cross": "Cross-attention"}
VIEW_NAMES = {
    "steps": "Step by step", "all": "All steps", "query": "One query", "compare": "Causal vs none",
    "backward": "Backward",
}  # fmt: skip
# The mask table's rows; a DataFrame is built only when its expander opens (pandas costs ~0.4 s
# to import, which a cold visit should not pay for a table it may never open).
MASK_ROWS = [
    ("Encoder self-attention", "none", "nothing: every token sees every token"),
    ("Decoder self-attention", "causal", "the future: token i sees tokens 0…i"),
    ("Encoder with padded batch", "padding", "padding tokens added to fill a batch"),
    ("Cross-attention", "cross", "padding of the source sentence; queries come from the target"),
]


def controls(box: Any) -> Settings:
    """The input controls, drawn in ``box``."""
    links.upgrade(preset=PRESET_NAMES, mask=MASK_NAMES, view=VIEW_NAMES, scaled=links.on_off, pos=links.on_off)
    with box:
        c = st.columns([1.3, 1.5, 1, 1])
        preset = c[0].selectbox("Input", PRESETS, format_func=PRESET_NAMES.__getitem__, key="preset",
                                bind="query-params", help="Tiny: small integers to check by hand. Sentence: “The "
                                "animal didn't cross the street because it was too tired”. Trained model: one head "
                                "of all-MiniLM-L6-v2. Gemma decoder: one head of gemma-3-270m.")
        mask = c[1].selectbox("Mask", MASK_KINDS, format_func=MASK_NAMES.__getitem__, key="mask", bind="query-params",
                              help="No mask: encoder self-attention. Causal: decoder self-attention. Padding: keys "
                              "that only fill a batch. Cross-attention: queries from a second sequence (n_q ≠ n_k).")
        p = {
            "preset": preset, "mask": mask,
            "scaled": c[2].toggle("Divide by √d_k", True, key="scaled", bind="query-params",
                                  help="Off shows the raw, unscaled scores."),
            "positions": c[3].toggle("Positional encodings", key="pos", bind="query-params",
                               disabled=preset in ("model", "decoder"),
                               help="Add sinusoidal position codes to X."),  # the model's X holds learned positions
        }  # fmt: skip
        sized = preset not in ("tiny", "model", "decoder")
        c = st.columns(7)
        p |= {
            "n": c[0].slider("Tokens n", 2, 16, 6, key="n", bind="query-params", disabled=preset != "random",
                             help="Random input only."),
            "d_model": c[1].slider("d_model", 4, 64, 8, key="d_model", bind="query-params", disabled=not sized,
                                   help="Width of X."),
            "d_k": c[2].slider("d_k", 1, 64, 4, key="d_k", bind="query-params", disabled=not sized,
                               help="Width of Q and K."),
            "d_v": c[3].slider("d_v", 1, 64, 4, key="d_v", bind="query-params", disabled=not sized,
                               help="Width of V and the output."),
            "seed": c[4].number_input("Seed", 0, 9999, 0, key="seed", bind="query-params", disabled=not sized),
            "pad": c[5].slider("Padded keys", 0, 16, 1, key="pad", bind="query-params",
                               disabled=mask not in ("padding", "cross"),
                               help="How many keys at the end are padding. All of them leaves a query nothing "
                               "to attend to."),
            "dropout_p": c[6].slider("Dropout p", 0.0, 0.5, 0.0, 0.1, key="drop", bind="query-params",
                                help="Training-mode dropout on the weights; survivors are scaled by 1/(1−p)."),
        }  # fmt: skip
        if preset == "model":  # the trained model's own three
            c = st.columns([4, 1, 1])
            p |= {
                "text": c[0].text_input("Sentence", MODEL_TEXT, max_chars=500, key="text", bind="query-params",
                                        help="Up to 128 tokens. Press Enter to run."),
                "layer": c[1].selectbox("Layer", range(6), MODEL_LAYER, key="layer", bind="query-params"),
                "head": c[2].selectbox("Head", range(12), MODEL_HEAD, key="head", bind="query-params"),
            }  # fmt: skip
        if preset == "decoder":  # the decoder's: 18 layers of 4 query heads
            c = st.columns([4, 1, 1])
            p |= {
                "text": c[0].text_input("Sentence", MODEL_TEXT, max_chars=1000, key="text", bind="query-params",
                                        help=f"Up to {DECODER_MAX_TOKENS} tokens. Press Enter to run."),
                "layer": c[1].selectbox("Layer", range(18), DECODER_LAYER, key="dlayer", bind="query-params",
                                        help="5, 11 and 17 are global; the others have a window of 512."),
                "head": c[2].selectbox("Query head", range(4), DECODER_HEAD, key="dhead", bind="query-params"),
            }  # fmt: skip
    return Settings(**p)


def walkthrough_page() -> None:
    nav = None
    if talk():  # on a projector the settings, the view switch and the step control share one row
        top = st.columns([1, 4.2, 3.2], vertical_alignment="center")
        params = controls(top[0].popover("Settings", icon=":material/tune:", width="stretch"))
        view_box, nav = top[1], top[2]
    else:
        st.title("The five steps of attention")
        params = controls(st.container(border=True))
        view_box = None
    try:
        d = walkthrough_data(params)
    except ValueError as exc:
        st.error(f"These settings can't be computed: {exc}")
        return
    if view_box is None:
        st.caption(d.note)
        view_box = st.container()
    view = view_box.segmented_control("View", tuple(VIEW_NAMES), format_func=VIEW_NAMES.__getitem__, default="steps",
                                      key="view", required=True, bind="query-params", label_visibility="collapsed")
    views = {"all": all_view, "query": query_view, "compare": compare_view, "backward": backward_view}
    views.get(view, lambda s, d: steps_view(s, d, nav))(params, d)

    st.divider()
    check_panel(d)
    code = st.expander("Reproduce these matrices in torch", key="wt_code", on_change="rerun")
    if code.open:
        code.code(d.snippet, language="python")
    masks = st.expander("Which mask does each kind of attention use?", key="wt_masks", on_change="rerun")
    if masks.open:
        import pandas as pd

        styled = pd.DataFrame(MASK_ROWS, columns=("kind of attention", "mask", "what it blocks")).style.apply(
            lambda row: ["background-color: #FFE9B3" if row["mask"] == params.mask else "" for _ in row], axis=1
        )
        masks.dataframe(styled, hide_index=True, width="stretch")


walkthrough_page()
