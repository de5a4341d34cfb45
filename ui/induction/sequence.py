"""Your sequence tab: the trained model reads a sequence it has never seen, random or made of the viewer's words."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st
import torch

from attention_core.induction import repeated_tokens, seeded_generator, tokens_from_words
from figures.induction import head_name, sequence_figure
from ui import draw
from ui.frame import talk
from ui.induction import runs

SOURCES = {"words": "Your words", "random": "Random tokens"}
DEFAULT_TEXT = "the quick brown fox jumps over the lazy dog and then the quick brown fox jumps over the lazy dog"
MAX_CHARS = 600


@st.cache_data(max_entries=64, show_spinner=False)
def random_sequence(length: int, repeats: int, seed: int, vocab: int) -> tuple[int, ...]:
    """``length`` fresh random tokens, then ``repeats`` more copies of them."""
    g = seeded_generator(seed, torch.device("cpu"))
    once = repeated_tokens(1, length, vocab, generator=g)[0, :length]  # (length,)
    return tuple(once.repeat(repeats + 1).tolist())


def predictable(tokens: list[int]) -> np.ndarray:
    """Bool ``(L − 1,)``: prediction i (of token i + 1) can be copied: token i occurred before, and every earlier
    occurrence was followed by token i + 1."""
    out = np.zeros(len(tokens) - 1, dtype=bool)
    for i in range(len(tokens) - 1):
        after = {tokens[j + 1] for j in range(i) if tokens[j] == tokens[i]}
        out[i] = after == {tokens[i + 1]}
    return out


def _figure(is_talk: bool, name: str, tokens: tuple[int, ...], labels: tuple[str, ...], layer: int, head: int) -> Any:
    r = runs.read_sequence(name, tokens)
    guess = [labels[tokens.index(p)] if p in tokens else "(new)" for p in r.predicted]
    n = len(tokens)
    return sequence_figure(r.patterns[layer, head], labels, guess, r.confidence, talk=is_talk,
                           height=max(420, min(820, 160 + 20 * n)) if not is_talk else 430)  # fmt: skip


def sequence_controls(vocab: int, n_ctx: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
    (c,) = draw.settings([1.6, 4])
    source = c[0].segmented_control("Sequence", tuple(SOURCES), default="words", required=True, wrap=True,
                                    format_func=SOURCES.__getitem__, key="in_source", bind="query-params")
    if source == "random":
        (r,) = draw.settings([1, 1, 1], box=c[1])
        length = r[0].slider("Tokens before the repeat", 2, 24, 7, key="in_len", bind="query-params",
                             help="Training never used fewer than 12: shorter repeats are new to the model.")
        repeats = r[1].slider("Repeats", 1, 5, 2, key="in_reps", bind="query-params")
        seed = r[2].number_input("Seed", 0, 9999, 1, key="in_sseed", bind="query-params")
        repeats = min(repeats, n_ctx // length - 1)
        tokens = random_sequence(length, repeats, seed, vocab)
        return tokens, tuple(str(t) for t in tokens)
    text = c[1].text_input("Your words, separated by spaces", DEFAULT_TEXT, max_chars=MAX_CHARS, key="in_text",
                           bind="query-params", help=f"Up to {n_ctx} words. Each different word becomes one token; "
                           "the model knows nothing of their meaning, only which follows which.")  # fmt: skip
    ids, words = tokens_from_words(text, vocab, n_ctx)
    if len(ids) < 2:
        raise ValueError("type at least two words: the model predicts each word from those before it")
    return tuple(ids), tuple(words)


def sequence_tab() -> None:
    name = runs.current("induction")
    v = runs.view(name)
    tokens, labels = sequence_controls(v.vocab, 2 * v.half)
    layer, head = v.layers - 1, int(v.scores.prefix_matching[-1].argmax())
    draw.prose(
        "The model was trained on random tokens, each sequence one block repeated once. Here it reads something "
        "else: your words (it only ever sees *which word follows which*), or a shorter block repeated several "
        "times. Where a word occurred before, the induction head looks at what followed it, and the model "
        "predicts that. Where the earlier copies disagree (*the quick* … *the lazy*), it hedges."
    )
    r = runs.read_sequence(name, tokens)
    can = predictable(list(tokens))
    right = np.array(r.predicted[:-1]) == np.array(tokens[1:])
    n_can = int(can.sum())
    left, side = st.columns([2.2, 1], gap="medium")
    with left:
        st.markdown(f"**Induction head {head_name(layer, head)}**: where each word looks (rows), and the model's "
                    "guess for the next word (after the arrow)")  # fmt: skip
        draw.chart(draw.figure(_figure, talk(), name, tokens, labels, layer, head), "in_sequence")
    side.metric("Copyable predictions", f"{int(right[can].sum())} of {n_can} right" if n_can else "none",
                help="The word occurred before, and every earlier copy was followed by the same word.")
    side.metric("The others", f"{int(right[~can].sum())} of {int((~can).sum())} right",
                help="Nothing to copy: the model can only guess.")
    side.metric("Mean loss on the copyable", f"{r.nll[can].mean():.2f} nats" if n_can else "n/a",
                f"chance: ln {v.vocab} = {np.log(v.vocab):.2f}", delta_color="off", delta_arrow="off")
