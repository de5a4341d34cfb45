"""gemma-3-270m, loaded once per server and shared by every session and page that uses it (never per session).

Only the decoder page and the walkthrough's decoder preset call :func:`decoder`, so the other pages never read it.
"""

from __future__ import annotations

import streamlit as st

from attention_core.decoder import Decoder, load_decoder, run_decoder

LOADING = (
    "Loading gemma-3-270m: reading its 268 M weights from the installed package (once per server, a few seconds)…"
)


@st.cache_resource(show_spinner=LOADING)
def decoder() -> Decoder:
    model = load_decoder()
    run_decoder(model, "A first prompt warms the model up.")  # the first forward pays one-off costs
    return model
