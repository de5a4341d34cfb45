"""The model page's sections: all 72 heads at once, one token across them, the tired/wide pair, attention sinks."""

from __future__ import annotations

import numpy as np
import streamlit as st

from figures.model import head_label
from figures.style import PLOTLY_CONFIG
from ui import draw
from ui.frame import talk

from .data import SentenceReading, grid_figure, map_figure, pair_data, token_figure

WALKTHROUGH = "app_pages/walkthrough.py"
TRAINED = "Trained model"  # the walkthrough's name for its model preset (its PRESET_NAMES["model"]), as links write it
N_LAYERS, N_HEADS = 6, 12


def token_labels(tokens: list[str]) -> tuple[list[str], int]:
    """The token picker's options ("10: it": unique, and readable in the link) and its default, "it" if present."""
    return [f"{i}: {t}" for i, t in enumerate(tokens)], tokens.index("it") if "it" in tokens else 1


def walkthrough_query(text: str, layer: int, head: int) -> dict[str, str]:
    """The walkthrough's link to one head (talk mode goes along by itself: the frame's toggle is on every page)."""
    return {"preset": TRAINED, "text": text, "layer": str(layer), "head": str(head)}


def grid_section(text: str) -> None:
    st.subheader("All 72 heads at once")
    draw.prose(
        "Each small square is one head's weight matrix on this sentence: row = the token that asks, "
        "column = the token it takes from (darker = more). **Click a head** to open it in the walkthrough "
        "with its real Q, K and V, or choose it below."
    )
    grid, c = st.container(), st.columns([1, 1, 3], vertical_alignment="bottom")
    layer = c[0].selectbox("Layer", range(N_LAYERS), 3, key="md_layer", bind="query-params")
    head = c[1].selectbox("Head", range(N_HEADS), 1, key="md_head", bind="query-params")
    c[2].page_link(
        WALKTHROUGH, label=f"Open {head_label(layer, head)} in the walkthrough: its Q, K, V through the five steps",
        icon=":material/stairs:", query_params=walkthrough_query(text, layer, head),
    )  # fmt: skip
    with grid:  # above its controls, drawn with their values
        event = draw.chart(draw.figure(grid_figure, text, layer, head, talk()), "md_grid", on_select="rerun",
                           selection_mode="points", config={**PLOTLY_CONFIG, "displayModeBar": False})  # fmt: skip
    points = [p for p in (event.selection.points if event else []) if p.get("curve_number") == 1]
    if points:  # a click on a tile: that head, in the walkthrough
        layer, head = divmod(int(points[0]["point_index"]), N_HEADS)
        st.switch_page(WALKTHROUGH, query_params=walkthrough_query(text, layer, head))


def token_section(text: str, d: SentenceReading) -> None:
    tokens = d.tokens
    labels, default = token_labels(tokens)
    if st.session_state.get("_md_tok_sentence", text) != text:  # a new sentence starts again from "it"
        st.session_state.md_tok = labels[default]
    st.session_state._md_tok_sentence = text
    heading, c = st.container(), st.columns([1, 3], vertical_alignment="center")
    tok = labels.index(c[0].selectbox("Token", labels, default, key="md_tok", bind="query-params"))
    heading.markdown(f"### Who does `{tokens[tok]}` look at?")  # a token in code: "nan" is a word here, not a number
    strongest = d.links[tok]
    if strongest:
        parts = [f"{head_label(layer, head)} gives `{tokens[j]}` {w:.2f}" for layer, head, j, w in strongest]
        c[1].markdown("**Strongest links from this token:** " + "; ".join(parts) + ".")
    draw.chart(draw.figure(token_figure, text, tok, talk()), "md_tokfig")


def pair_section() -> None:
    heads = pair_data()
    n, good = len(heads), [h for h in heads if h.resolves]  # best margin first
    st.markdown("##### The pair: “…too tired” (it = animal) against “…too wide” (it = street)")
    lines = ["No head puts more of “it” on the right noun in both sentences."]
    if good:
        shown = ", ".join(f"**{head_label(h.layer, h.head)}** (tired: animal {h.a_right:.2f} vs street "
                          f"{h.a_wrong:.2f}; wide: street {h.b_right:.2f} vs animal {h.b_wrong:.2f})" for h in good[:3])
        lines = [f"{len(good)} of {n} heads put more of “it” on the right noun in **both** sentences. "
                 f"The clearest: {shown}."]
        if good[0].margin < 0.1:
            lines.append(f"All by small margins (at most {good[0].margin:.2f}): none of them links “it” to its noun "
                         "as firmly as the head below links it to “animal”.")
    strong = max(heads, key=lambda h: h.a_right)
    if strong.b_wrong > strong.b_right:
        lines.append(
            f"**Where it goes wrong:** the strongest link, **{head_label(strong.layer, strong.head)}**, gives "
            f"“animal” {strong.a_right:.2f} in the tired sentence, but in the wide one it still prefers “animal” "
            f"({strong.b_wrong:.2f}) to “street” ({strong.b_right:.2f}): it follows the noun, not the meaning."
        )
    street, animal = (sum(getattr(h, side) for h in heads) / n for side in ("b_right", "b_wrong"))
    tired_ok, wide_ok = sum(h.a_right > h.a_wrong for h in heads), sum(h.b_right > h.b_wrong for h in heads)
    verdict = "still favours “animal”, the wrong noun" if animal > street else "favours “street”, the right noun"
    lines.append(
        f"Counting heads: {tired_ok} of {n} pick “animal” in the tired sentence, only {wide_ok} pick "
        f"“street” in the wide one. Averaged over all heads, “it” in the wide sentence gives street "
        f"{street:.3f} and animal {animal:.3f}: the average {verdict}."
    )
    st.markdown("\n\n".join(lines))


def sink_section(text: str, d: SentenceReading) -> None:
    st.subheader("Attention sinks")
    st.markdown(
        "An **attention sink** is a token that collects the weight a head has no use for: softmax must hand out "
        "a total of 1 in every row, so a head with nothing relevant to pick up parks its weight on a token such "
        "as [SEP] or [CLS], whose value then changes the output little."
    )
    n, both = len(d.tokens), d.cls + d.sep
    sink = "[CLS]" if d.cls.max() >= d.sep.max() else "[SEP]"
    shares = d.cls if sink == "[CLS]" else d.sep
    layer, head = np.unravel_index(int(np.argmax(shares)), shares.shape)
    st.markdown(
        f"On this sentence the average head puts **{both.mean():.0%}** of its attention on [CLS] and [SEP], "
        f"2 of its {n} tokens ({2 / n:.0%} if it spread evenly): [CLS] takes {d.cls.mean():.0%}, [SEP] "
        f"{d.sep.mean():.0%}. The heaviest sink: **{head_label(int(layer), int(head))}** puts "
        f"{shares[layer, head]:.2f} of its attention on {sink}."
    )
    # Side by side on a monitor; one under the other in talk mode, so 12 numbers a row stay legible.
    for col, what in zip(st.columns(2) if not talk() else [st.container()] * 2, ("cls", "sep"), strict=True):
        with col:
            draw.chart(draw.figure(map_figure, text, what, talk()), f"md_{what}")
    c = st.columns([3, 2], vertical_alignment="center") if not talk() else [st.container()] * 2
    with c[0]:
        draw.chart(draw.figure(map_figure, text, "entropy", talk()), "md_ent")
    c[1].markdown(
        "**Entropy ÷ log L**: 1 means a head spreads each row evenly over all L tokens; 0 means it puts "
        "everything on one. Sink heads sit low: most of each row lands on one token."
    )
