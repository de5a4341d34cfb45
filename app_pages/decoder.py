"""A model that writes: gemma-3-270m, a trained decoder, through attention_core's own five steps."""

from __future__ import annotations

import streamlit as st

from ui.decoder.controls import prompt_controls
from ui.decoder.data import prompt_data
from ui.decoder.model import decoder
from ui.decoder.reading import heads_tab, next_token_tab, shared_kv_tab, sinks_tab, window_tab
from ui.decoder.snippet import decoder_snippet
from ui.decoder.writing import shown, write_tab
from ui.frame import talk

TABS = ("Next token", "Write", "Every head", "Shared K/V", "Local & global", "Sinks")
TERMS = "https://ai.google.dev/gemma/terms"
SHOWN_TOKENS = 32  # the token strip: the first ones, then how many more (a phone shows them in a few lines)


def token_strip(tokens: list[str]) -> str:
    from figures.decoder import token_label

    strip = " · ".join(f"`{token_label(t, 20)}`" for t in tokens[:SHOWN_TOKENS])
    more = f" · … and {len(tokens) - SHOWN_TOKENS} more" if len(tokens) > SHOWN_TOKENS else ""
    return f"**{len(tokens)} tokens:** {strip}{more}"


def current(key: str, default: float) -> float:
    """A control's value where its tab is closed: from the session, else the link, else its default."""
    value = st.session_state.get(key, st.query_params.get(key, default))
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def decoder_page() -> None:
    if not talk():
        st.title("A model that writes: gemma-3-270m")
        st.caption(
            "Google's gemma-3-270m, a decoder of 18 layers × 4 query heads (one shared key/value head per layer, "
            "head size 256), its trained weights read from the installed package. Every weight on this page comes "
            "from attention_core's own five steps, checked against transformers in the tests. "
            f"The model is used under the [Gemma terms of use]({TERMS})."
        )
    decoder()  # the first visit to this server says it is loading the model (its spinner), then it is kept
    if talk():  # the prompt in one line, its controls folded beside it
        top = st.columns([1, 7], vertical_alignment="center")
        text = prompt_controls(top[0].popover("Prompt", icon=":material/edit:", width="stretch"))
        top[1].markdown("**Prompt:** " + shown(text if len(text) <= 90 else "…" + text[-89:]).replace("  \n", " ↵ "))
    else:
        text = prompt_controls(st.container(border=True))
    try:
        d = prompt_data(text)
    except ValueError as exc:
        st.error(f"This prompt can't be read: {exc}.")
        return
    if not talk():
        st.markdown(token_strip(d["tokens"]))
    tabs = st.tabs(list(TABS), key="dc_tab", bind="query-params", on_change="rerun")
    name, tab = next((name, tab) for name, tab in zip(TABS, tabs, strict=True) if tab.open)
    with tab:
        try:
            if name == "Next token":
                next_token_tab(text)
            elif name == "Write":
                write_tab(text)
            elif name == "Every head":
                heads_tab(text, d)
            elif name == "Shared K/V":
                shared_kv_tab(text, d)
            elif name == "Local & global":
                window_tab(text, d)
            else:
                sinks_tab(text, d)
        except ValueError as exc:
            st.error(f"These settings cannot be computed: {exc}")
    if talk():
        st.caption(f"gemma-3-270m · [Gemma terms of use]({TERMS})")
        return
    code = st.expander("Reproduce these numbers with attention_core", key="dc_code", on_change="rerun")
    if code.open:
        layer, head = int(current("dc_layer", 5)), int(current("dc_head", 0))
        code.code(decoder_snippet(text, min(2.0, max(0.0, current("dc_temp", 1.0))), min(17, max(0, layer)),
                                  min(3, max(0, head))), language="python")  # fmt: skip


decoder_page()
