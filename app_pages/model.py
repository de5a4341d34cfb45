"""Real attention: all-MiniLM-L6-v2's 72 trained heads, computed by attention_core on a sentence you type."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attention_core.bert import (
    MAX_TOKENS,
    coreference_pair,
    entropy_share,
    sentence_weights,
    sink_shares,
    strongest_links_all,
    tokenize,
)
from figures.model import head_grid, head_label, layer_head_map, token_across_heads
from figures.style import PLOTLY_CONFIG
from ui import urlstate
from ui.model import encoder
from ui.params import ChoiceParam, IntParam, TextParam

WALKTHROUGH = "app_pages/walkthrough.py"
TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."
EXAMPLES = {
    "tired": TIRED,
    "wide": WIDE,
    "trophy": "The trophy didn't fit into the brown suitcase because it was too big.",
    "keys": "The keys to the old wooden cabinet are on the kitchen table.",
    "own": "",
}
EXAMPLE_NAMES = {
    "tired": "“…because it was too tired.”",
    "wide": "“…because it was too wide.”",
    "trophy": "“The trophy didn't fit into the suitcase…”",
    "keys": "“The keys to the cabinet are…”",
    "own": "Your own sentence",
}
N_LAYERS, N_HEADS = 6, 12
MAX_CHARS = 500
PARAMS = [
    ChoiceParam("md_ex", "tired", tuple(EXAMPLES), label="example"),
    TextParam("md_text", TIRED, MAX_CHARS, label="sentence"),
    IntParam("md_layer", 3, 0, N_LAYERS - 1, label="layer"),
    IntParam("md_head", 1, 0, N_HEADS - 1, label="head"),
    IntParam("md_tok", -1, -1, MAX_TOKENS - 1, label="token"),  # -1: "it" when there is one
]
SINK = (
    "An **attention sink** is a token that collects the weight a head has no use for: softmax must hand out "
    "a total of 1 in every row, so a head with nothing relevant to pick up parks its weight on a token such "
    "as [SEP] or [CLS], whose value then changes the output little."
)


# --------------------------------------------------------------------------------------------
# Data: the core through thin caches keyed on plain strings


# Bounded: a 128-token sentence keeps 6·12·128·128 float32 weights (4.7 MB), so 16 of them ≤ 76 MB.
@st.cache_data(max_entries=16, show_spinner=False)
def sentence_data(text: str) -> dict[str, Any]:
    """Tokens, every head's weights (6, 12, L, L) and the sink readings of one sentence."""
    bert = encoder()
    unknown = tokenize(bert.tokenizer, text).unknown  # validates: ValueError for empty or long text
    tokens, w = sentence_weights(bert, text)
    cls, sep = sink_shares(w)
    links = strongest_links_all(w, k=3)  # for every token, so choosing one needs no compute
    return {
        "links": links,
        "tokens": list(tokens), "unknown": list(unknown), "weights": w.cpu().numpy(),
        "cls": cls.cpu().numpy(), "sep": sep.cpu().numpy(), "entropy": entropy_share(w).cpu().numpy(),
    }  # fmt: skip


@st.cache_data(show_spinner=False)
def pair_data() -> dict[str, Any]:
    """Every head on the tired/wide pair: "it" → "animal" and "it" → "street" in both sentences."""
    bert = encoder()
    pair = coreference_pair(
        sentence_weights(bert, TIRED), sentence_weights(bert, WIDE), pronoun="it", a_referent="animal",
        b_referent="street",
    )  # fmt: skip
    heads = [
        {"name": head_label(h.layer, h.head), "tired_animal": h.a_right, "tired_street": h.a_wrong,
         "wide_street": h.b_right, "wide_animal": h.b_wrong, "resolves": h.resolves, "margin": h.margin}
        for h in pair.heads
    ]  # fmt: skip
    return {
        "heads": heads, "tired_ok": pair.a_correct, "wide_ok": pair.b_correct,
        "wide_street": pair.mean("b_right"), "wide_animal": pair.mean("b_wrong"),
    }  # fmt: skip


@st.cache_resource(max_entries=32, show_spinner=False)
def grid_figure(text: str, layer: int, head: int, talk: bool) -> go.Figure:
    d = sentence_data(text)
    return head_grid(d["weights"], d["tokens"], selected=(layer, head), talk=talk)


@st.cache_resource(max_entries=32, show_spinner=False)
def token_figure(text: str, tok: int, talk: bool) -> go.Figure:
    d = sentence_data(text)
    return token_across_heads(d["weights"][:, :, tok, :], d["tokens"], tok, talk=talk)  # (6, 12, L)


@st.cache_resource(max_entries=32, show_spinner=False)
def summary_figure(text: str, what: str, talk: bool) -> go.Figure:
    d = sentence_data(text)
    titles = {
        "cls": "Share of attention on [CLS]",
        "sep": "Share of attention on [SEP]",
        "entropy": "Row entropy ÷ its maximum log L",
    }
    return layer_head_map(d[what], title=titles[what], talk=talk)


# --------------------------------------------------------------------------------------------
# Controls


def _pick_example() -> None:
    s = st.session_state
    if s.md_ex != "own":
        s.md_text = EXAMPLES[s.md_ex]
    s.md_tok = -1


def _typed() -> None:
    s = st.session_state
    if s.md_ex != "own" and s.md_text != EXAMPLES[s.md_ex]:
        s.md_ex = "own"
    s.md_tok = -1


def controls(box: Any) -> str:
    s = st.session_state
    if s.md_ex != "own" and s.md_text != EXAMPLES[s.md_ex]:  # only a hand-made link gets here
        if s.md_text == TIRED:  # it named an example but no sentence (the default): show the example
            s.md_text = EXAMPLES[s.md_ex]
        else:  # it brought its own sentence
            s.md_ex = "own"
    with box:
        c = st.columns([1, 2.4])
        c[0].selectbox("Example", tuple(EXAMPLES), format_func=EXAMPLE_NAMES.get, key="md_ex", on_change=_pick_example)
        c[1].text_input(
            "Sentence", key="md_text", max_chars=MAX_CHARS, on_change=_typed,
            help=f"Any English text up to {MAX_TOKENS} tokens, [CLS] and [SEP] included. Press Enter to run.",
        )  # fmt: skip
    return str(s.md_text)


def walkthrough_query(text: str, layer: int, head: int, talk: bool) -> dict[str, str]:
    query = {"preset": "model", "text": text, "layer": str(layer), "head": str(head)}
    return query | ({"talk": "1"} if talk else {})


# --------------------------------------------------------------------------------------------
# Sections


def grid_section(text: str, d: dict[str, Any], talk: bool) -> None:
    st.subheader("All 72 heads at once")
    if not talk:
        st.markdown(
            "Each small square is one head's weight matrix on this sentence: row = the token that asks, "
            "column = the token it takes from (darker = more). **Click a head** to open it in the walkthrough "
            "with its real Q, K and V, or choose it below."
        )
    layer, head = int(st.session_state.md_layer), int(st.session_state.md_head)
    event = st.plotly_chart(
        grid_figure(text, layer, head, talk), width="stretch", config={**PLOTLY_CONFIG, "displayModeBar": False},
        key="md_grid", on_select="rerun", selection_mode="points",
    )  # fmt: skip
    points = [p for p in (event.selection.points if event else []) if p.get("curve_number") == 1]
    if points:  # a click on a tile: that head, in the walkthrough
        layer, head = divmod(int(points[0]["point_index"]), N_HEADS)
        st.switch_page(WALKTHROUGH, query_params=walkthrough_query(text, layer, head, talk))
    c = st.columns([1, 1, 3], vertical_alignment="bottom")
    c[0].selectbox("Layer", range(N_LAYERS), key="md_layer")
    c[1].selectbox("Head", range(N_HEADS), key="md_head")
    layer, head = int(st.session_state.md_layer), int(st.session_state.md_head)
    c[2].page_link(
        WALKTHROUGH, label=f"Open {head_label(layer, head)} in the walkthrough: its Q, K, V through the five steps",
        icon=":material/stairs:", query_params=walkthrough_query(text, layer, head, talk),
    )  # fmt: skip


def _default_token(tokens: list[str]) -> int:
    return tokens.index("it") if "it" in tokens else 1


def token_section(text: str, d: dict[str, Any], talk: bool) -> None:
    tokens = d["tokens"]
    n = len(tokens)
    urlstate.ensure_choice("md_tok", list(range(n)), default=_default_token(tokens))
    tok = int(st.session_state.md_tok)
    st.markdown(f"### Who does `{tokens[tok]}` look at?")  # a token in code: "nan" is a word here, not a number
    c = st.columns([1, 3], vertical_alignment="center")
    c[0].selectbox("Token", range(n), format_func=lambda i: f"{i}: {tokens[i]}", key="md_tok")
    links = d["links"][tok]
    if links:
        parts = [f"{head_label(layer, head)} gives `{tokens[j]}` {w:.2f}" for layer, head, j, w in links]
        c[1].markdown("**Strongest links from this token:** " + "; ".join(parts) + ".")
    st.plotly_chart(token_figure(text, tok, talk), width="stretch", config=PLOTLY_CONFIG, key="md_tokfig")
    pair_section(talk)


def pair_section(talk: bool) -> None:
    p = pair_data()
    heads = p["heads"]
    st.markdown("##### The pair: “…too tired” (it = animal) against “…too wide” (it = street)")
    good = [h for h in heads if h["resolves"]]
    tired_ok, wide_ok = p["tired_ok"], p["wide_ok"]
    lines = []
    if good:
        shown = ", ".join(
            f"**{h['name']}** (tired: animal {h['tired_animal']:.2f} vs street {h['tired_street']:.2f}; "
            f"wide: street {h['wide_street']:.2f} vs animal {h['wide_animal']:.2f})"
            for h in good[:3]
        )
        lines.append(
            f"{len(good)} of {len(heads)} heads put more of “it” on the right noun in **both** sentences. "
            f"The clearest: {shown}."
        )
        if good[0]["margin"] < 0.1:
            lines.append(
                f"All by small margins (at most {good[0]['margin']:.2f}): none of them links “it” to its noun "
                "as firmly as the head below links it to “animal”."
            )
    else:
        lines.append("No head puts more of “it” on the right noun in both sentences.")
    strong = max(heads, key=lambda h: h["tired_animal"])
    if strong["wide_animal"] > strong["wide_street"]:
        lines.append(
            f"**Where it goes wrong:** the strongest link, **{strong['name']}**, gives “animal” "
            f"{strong['tired_animal']:.2f} in the tired sentence, but in the wide one it still prefers “animal” "
            f"({strong['wide_animal']:.2f}) to “street” ({strong['wide_street']:.2f}): it follows the noun, not "
            "the meaning."
        )
    mean_ws, mean_wa = p["wide_street"], p["wide_animal"]
    verdict = "still favours “animal”, the wrong noun" if mean_wa > mean_ws else "favours “street”, the right noun"
    lines.append(
        f"Counting heads: {tired_ok} of {len(heads)} pick “animal” in the tired sentence, only {wide_ok} pick "
        f"“street” in the wide one. Averaged over all heads, “it” in the wide sentence gives street "
        f"{mean_ws:.3f} and animal {mean_wa:.3f}: the average {verdict}."
    )
    st.markdown("\n\n".join(lines))


def sink_section(text: str, d: dict[str, Any], talk: bool) -> None:
    st.subheader("Attention sinks")
    st.markdown(SINK)
    n = len(d["tokens"])
    both = d["cls"] + d["sep"]
    sink = "[CLS]" if d["cls"].max() >= d["sep"].max() else "[SEP]"
    shares = d["cls"] if sink == "[CLS]" else d["sep"]
    layer, head = np.unravel_index(int(np.argmax(shares)), shares.shape)
    st.markdown(
        f"On this sentence the average head puts **{both.mean():.0%}** of its attention on [CLS] and [SEP], "
        f"2 of its {n} tokens ({2 / n:.0%} if it spread evenly): [CLS] takes {d['cls'].mean():.0%}, [SEP] "
        f"{d['sep'].mean():.0%}. The heaviest sink: **{head_label(int(layer), int(head))}** puts "
        f"{shares[layer, head]:.2f} of its attention on {sink}."
    )
    # Side by side on a monitor; one under the other in talk mode, so 12 numbers a row stay legible.
    c = st.columns(2) if not talk else [st.container(), st.container()]
    for col, what in zip(c, ("cls", "sep"), strict=True):
        col.plotly_chart(summary_figure(text, what, talk), width="stretch", config=PLOTLY_CONFIG, key=f"md_{what}")
    c = st.columns([3, 2], vertical_alignment="center") if not talk else [st.container(), st.container()]
    c[0].plotly_chart(summary_figure(text, "entropy", talk), width="stretch", config=PLOTLY_CONFIG, key="md_ent")
    c[1].markdown(
        "**Entropy ÷ log L**: 1 means a head spreads each row evenly over all L tokens; 0 means it puts "
        "everything on one. Sink heads sit low: most of each row lands on one token."
    )


def model_page() -> None:
    urlstate.seed(PARAMS)
    talk = urlstate.talk_mode()
    if not talk:
        st.title("Real attention: a trained model's 72 heads")
        st.caption(
            "all-MiniLM-L6-v2 (6 layers × 12 heads, d_model = 384, d_k = 32), its trained weights read from "
            "the installed package. Every weight on this page comes from attention_core's own five steps; "
            "the tests check them against sentence-transformers to 1e-5."
        )
    urlstate.notices()
    text = controls(st.container(border=True) if not talk else st.popover("Sentence", icon=":material/edit:"))
    try:
        d = sentence_data(text)
    except ValueError as exc:
        st.error(f"This sentence can't be read: {exc}.")
        urlstate.publish(PARAMS)
        return
    if d["unknown"]:
        pieces = [u if len(u) <= 24 else u[:23] + "…" for u in d["unknown"][:8]]
        st.warning(
            "Not in the model's vocabulary, so the model reads each as [UNK] (unknown): "
            + ", ".join(f"“{u}”" for u in pieces) + (", …" if len(d["unknown"]) > 8 else "")
        )
    st.markdown(f"**{len(d['tokens'])} tokens:** " + " · ".join(f"`{t}`" for t in d["tokens"]))
    grid_section(text, d, talk)
    st.divider()
    token_section(text, d, talk)
    st.divider()
    sink_section(text, d, talk)
    urlstate.publish(PARAMS)


model_page()
