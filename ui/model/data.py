"""The model page's numbers and figures: one sentence through all-MiniLM-L6-v2's 72 heads
(:func:`sentence_data`), the tired/wide pair (:func:`pair_data`), and the figures built from them, each keyed
on plain values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attention_core.bert.analysis import (
    HeadReading,
    coreference_pair,
    entropy_share,
    sentence_weights,
    sink_shares,
    strongest_links_all,
)
from attention_core.bert.tokens import tokenize
from figures.model import layer_head_grid, layer_head_map, token_across_heads
from ui.model import encoder

TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."
MAPS = {"cls": "Share of attention on [CLS]", "sep": "Share of attention on [SEP]",
        "entropy": "Row entropy ÷ its maximum log L"}  # fmt: skip


@dataclass(frozen=True)
class SentenceReading:
    """One sentence: its tokens (and those read as [UNK]), every head's weights ``(6, 12, L, L)``, each token's
    strongest links, and per head the share of attention on [CLS] and on [SEP] and the row entropy ÷ log L
    ``(6, 12)``."""

    tokens: list[str]
    unknown: list[str]
    weights: np.ndarray
    links: list[list[tuple[int, int, int, float]]]
    cls: np.ndarray
    sep: np.ndarray
    entropy: np.ndarray


# Bounded: a 128-token sentence keeps 6·12·128·128 float32 weights (4.7 MB), so 16 of them ≤ 76 MB.
@st.cache_data(max_entries=16, show_spinner=False)
def sentence_data(text: str) -> SentenceReading:
    """Tokens, every head's weights and the sink readings of one sentence."""
    bert = encoder()
    unknown = tokenize(bert.tokenizer, text).unknown  # validates: ValueError for empty or long text
    tokens, w = sentence_weights(bert, text)
    cls, sep = sink_shares(w)
    return SentenceReading(
        tokens=list(tokens), unknown=list(unknown), weights=w.cpu().numpy(),
        links=strongest_links_all(w, k=3),  # for every token, so choosing one needs no compute
        cls=cls.cpu().numpy(), sep=sep.cpu().numpy(), entropy=entropy_share(w).cpu().numpy(),
    )  # fmt: skip


@st.cache_data(show_spinner=False)
def pair_data() -> tuple[HeadReading, ...]:
    """Every head on the tired/wide pair: "it" → "animal" and "it" → "street" in both sentences.

    Sentence a is the tired one (it = animal), b the wide one (it = street): ``a_right`` is tired → animal,
    ``a_wrong`` tired → street, ``b_right`` wide → street, ``b_wrong`` wide → animal.
    """
    bert = encoder()
    tired, wide = sentence_weights(bert, TIRED), sentence_weights(bert, WIDE)
    return coreference_pair(tired, wide, pronoun="it", a_referent="animal", b_referent="street")


# Figure builders from plain values, each built once per arguments (draw.figure).
def grid_figure(text: str, layer: int, head: int, talk: bool) -> go.Figure:
    d = sentence_data(text)
    return layer_head_grid(d.weights, d.tokens, selected=(layer, head), talk=talk)


def token_figure(text: str, tok: int, talk: bool) -> go.Figure:
    d = sentence_data(text)
    return token_across_heads(d.weights[:, :, tok, :], d.tokens, tok, talk=talk)  # (6, 12, L)


def map_figure(text: str, what: str, talk: bool) -> go.Figure:
    return layer_head_map(getattr(sentence_data(text), what), title=MAPS[what], talk=talk)
