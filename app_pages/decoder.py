"""A model that writes: gemma-3-270m, a trained decoder, through attention_core's own five steps."""

from __future__ import annotations

import contextlib

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from figures.decoder import token_label
from ui.decoder.controls import prompt_controls
from ui.decoder.data import prompt_data
from ui.decoder.model import decoder
from ui.decoder.reading import heads_tab, next_token_tab, shared_kv_tab, sinks_tab, window_tab
from ui.decoder.snippet import decoder_snippet
from ui.decoder.writing import shown, write_tab
from ui.frame import talk
from ui.page import tabbed_page

TABS = {
    "Next token": next_token_tab, "Write": write_tab, "Every head": heads_tab, "Shared K/V": shared_kv_tab,
    "Local & global": window_tab, "Sinks": sinks_tab,
}  # fmt: skip
TERMS = "https://ai.google.dev/gemma/terms"
INTRO = (  # a model card's note: small and grey, as a caption
    ":gray[:small[Google's gemma-3-270m, a decoder of 18 layers × 4 query heads (one shared key/value head per layer, "
    "head size 256), its trained weights read from the installed package. Every weight on this page comes from "
    "attention_core's own five steps, checked against transformers in the tests. "
    f"The model is used under the [Gemma terms of use]({TERMS}).]]"
)
SHOWN_TOKENS = 32  # the token strip: the first ones, then how many more (a phone shows them in a few lines)


def token_strip(tokens: list[str]) -> str:
    strip = " · ".join(f"`{token_label(t, 20)}`" for t in tokens[:SHOWN_TOKENS])
    more = f" · … and {len(tokens) - SHOWN_TOKENS} more" if len(tokens) > SHOWN_TOKENS else ""
    return f"**{len(tokens)} tokens:** {strip}{more}"


def prompt_settings(box: DeltaGenerator, tab: str) -> str:
    """The prompt above the tabs, and its tokens under it (the open tab says why a prompt cannot be read)."""
    decoder()  # the first visit to this server says it is loading the model (its spinner), then it is kept
    text = prompt_controls(box)
    if not talk():
        with contextlib.suppress(ValueError):
            box.markdown(token_strip(prompt_data(text).tokens))
    return text


def summary(text: str, tab: str) -> str:
    """The prompt in one line, beside its folded controls in talk mode."""
    return "**Prompt:** " + shown(text if len(text) <= 90 else "…" + text[-89:]).replace("  \n", " ↵ ")


def current(key: str, default: float) -> float:
    """A control's value where its tab is closed: from the session, else the link, else its default."""
    value = st.session_state.get(key, st.query_params.get(key, default))
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


tabbed_page(TABS, key="dc_tab", title="A model that writes: gemma-3-270m", intro=INTRO, settings=prompt_settings,
            summary=summary, popover=("Prompt", ":material/edit:"))  # fmt: skip
if talk():
    st.caption(f"gemma-3-270m · [Gemma terms of use]({TERMS})")
else:
    code = st.expander("Reproduce these numbers with attention_core", key="dc_code", on_change="rerun")
    if code.open:  # the prompt as its widget left it; the other values also while their tab is closed
        temperature = min(2.0, max(0.0, current("dc_temp", 1.0)))
        layer, head = min(17, max(0, int(current("dc_layer", 5)))), min(3, max(0, int(current("dc_head", 0))))
        code.code(decoder_snippet(st.session_state.dc_text, temperature, layer, head), language="python")
