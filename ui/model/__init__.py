"""The pretrained encoder, loaded once per server and shared by every session; only the pages that show the model
call :func:`encoder`, so the others never read its weights."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from attention_core.bert.encoder import Bert, encode, load_bert


@st.cache_resource(show_spinner="Loading all-MiniLM-L6-v2 (22.6 M weights, read from the installed package)…")
def encoder() -> Bert:
    bert = load_bert()
    encode(bert, ["A first sentence warms the model up."])  # the first forward pays one-off costs
    return bert


def unknown_words(unknown: Sequence[str]) -> str:
    """The pieces of a text the vocabulary lacks (each read as [UNK]), quoted: the first eight, each cut at 24."""
    pieces = [u if len(u) <= 24 else u[:23] + "…" for u in unknown[:8]]
    return ", ".join(f"“{u}”" for u in pieces) + (", …" if len(unknown) > 8 else "")
