"""Real attention: all-MiniLM-L6-v2's 72 trained heads, computed by attention_core on a sentence you type."""

from __future__ import annotations

from typing import Any

import streamlit as st

from attention_core.bert.tokens import MAX_TOKENS
from ui import links
from ui.frame import talk
from ui.model import unknown_words
from ui.model.data import TIRED, WIDE, sentence_data
from ui.model.sections import grid_section, pair_section, sink_section, token_labels, token_section
from ui.page import example_or_own, heading

OWN = "Your own sentence"
EXAMPLES = {  # by the names the link writes
    "Tired animal": TIRED,
    "Wide street": WIDE,
    "Trophy and suitcase": "The trophy didn't fit into the brown suitcase because it was too big.",
    "Keys and cabinet": "The keys to the old wooden cabinet are on the kitchen table.",
    OWN: "",
}
OLD_NAMES = dict(zip(("tired", "wide", "trophy", "keys", "own"), EXAMPLES, strict=True))  # links from before bind
_pick_example, _typed = example_or_own(EXAMPLES, OWN, "md_ex", "md_text")  # choosing fills; typing makes it "own"


def _settle_link() -> None:
    """Before the controls take a link: its example by today's name (old links wrote codes), and the example and
    the sentence made to agree (a sentence of the link's own makes it "your own"; an example alone, its sentence)."""
    q, first = st.query_params, next(iter(EXAMPLES))
    if "md_ex" in st.session_state or q.get("md_ex", first) not in EXAMPLES | OLD_NAMES:  # drawn, or no example
        return
    asked, text = q.get("md_ex"), q.get("md_text")
    name = OLD_NAMES.get(asked, asked or first)
    if name != OWN and text not in (None, EXAMPLES[name]):
        name = OWN
    new = {"md_ex": name if asked or name != first else None,
           "md_text": EXAMPLES[name] if text is None and EXAMPLES[name] not in ("", TIRED) else text}  # fmt: skip
    links.rewrite({k: v for k, v in new.items() if v is not None and v != q.get(k)})


def _link_token(old: str) -> str | None:
    """Old links named the token by its index in the link's sentence (-1: the default)."""
    try:
        labels, default = token_labels(sentence_data(st.query_params.get("md_text", TIRED)).tokens)
    except ValueError:
        return None
    return labels[int(old)] if old.isdigit() and int(old) < len(labels) else labels[default] if old == "-1" else None


def controls(box: Any) -> str:
    """The example and the sentence, drawn in ``box``; returns the sentence."""
    _settle_link()
    links.upgrade(md_tok=_link_token)  # its options come from the link's sentence, now settled
    with box:
        c = st.columns([1, 2.4])
        c[0].selectbox("Example", tuple(EXAMPLES), key="md_ex", bind="query-params", on_change=_pick_example,
                       help="The first two differ in one word, and so does what “it” means.")
        return c[1].text_input(
            "Sentence", TIRED, max_chars=500, key="md_text", bind="query-params", on_change=_typed,
            help=f"Any English text up to {MAX_TOKENS} tokens, [CLS] and [SEP] included. Press Enter to run.",
        )  # fmt: skip


def model_page() -> None:
    heading(
        "Real attention: a trained model's 72 heads",
        "all-MiniLM-L6-v2 (6 layers × 12 heads, d_model = 384, d_k = 32), its trained weights read from the "
        "installed package. Every weight on this page comes from attention_core's own five steps; the tests "
        "check them against sentence-transformers to 1e-5.",
    )
    text = controls(st.popover("Sentence", icon=":material/edit:") if talk() else st.container(border=True))
    try:
        d = sentence_data(text)
    except ValueError as exc:
        st.error(f"This sentence can't be read: {exc}.")
        return
    if d.unknown:
        st.warning(f"Not in the model's vocabulary, so it reads each as [UNK] (unknown): {unknown_words(d.unknown)}")
    st.markdown(f"**{len(d.tokens)} tokens:** " + " · ".join(f"`{t}`" for t in d.tokens))
    grid_section(text)
    st.divider()
    token_section(text, d)
    pair_section()
    st.divider()
    sink_section(text, d)


model_page()
