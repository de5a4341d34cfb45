"""Ablate tab: zero one head of the two-layer model and see which jobs and which predictions go with it."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from figures.induction import head_name, patterns_figure, position_loss_figure
from ui import draw
from ui.frame import talk
from ui.induction import runs
from ui.induction.train import titles_of

NONE = "none"


def head_choices(layers: int, heads: int) -> tuple[str, ...]:
    return (NONE, *(head_name(layer, h) for layer in range(layers) for h in range(heads)))


def parse_head(choice: str) -> tuple[int, int]:
    """``"L0 H2"`` → ``(0, 2)``; ``"none"`` → ``(-1, -1)``."""
    if choice == NONE:
        return -1, -1
    layer, head = choice.split()
    return int(layer[1:]), int(head[1:])


def _patterns(is_talk: bool, name: str, layer: int, head: int) -> Any:
    v, a = runs.view(name), runs.ablation(name, layer, head)
    titles, rows = titles_of(a["previous_token"], a["prefix_matching"], v["layers"] - 1)
    if layer >= 0:
        titles[layer][head] = f"H{head}  zeroed"
    return patterns_figure(a["example"]["patterns"], v["tokens"], titles, row_titles=rows, half=v["half"],
                           talk=is_talk, height=400 if is_talk else 420)  # fmt: skip


def _losses(is_talk: bool, name: str, layer: int, head: int) -> Any:
    v = runs.view(name)
    curves = {"intact": runs.ablation(name, -1, -1)["per_position"]}
    if layer >= 0:
        curves[f"{head_name(layer, head)} zeroed"] = runs.ablation(name, layer, head)["per_position"]
    return position_loss_figure(v["tokens"], curves, half=v["half"], talk=is_talk, height=300 if is_talk else 340)


def ablate_tab() -> None:
    name = runs.current("induction")
    v = runs.view(name)
    prev = np.array(v["scores"]["previous_token"])[0]
    pm = np.array(v["scores"]["prefix_matching"])[-1]
    prev_head, ind_head = head_name(0, int(prev.argmax())), head_name(v["layers"] - 1, int(pm.argmax()))
    choices = head_choices(v["layers"], v["heads"])
    (c,) = draw.settings([2, 5])
    choice = c[0].selectbox(
        "Zero this head",
        choices,
        index=choices.index(prev_head),
        key="in_ablate",
        bind="query-params",
        help="Its output is multiplied by 0; every other weight stays.",
    )
    layer, head = parse_head(choice)
    who = "the shipped two-layer model" if name.startswith("shipped:") else "your two-layer run"
    c[1].markdown(f"On {who}. Its previous-token head is **{prev_head}** ({prev.max():.2f}); its best induction "
                  f"head is **{ind_head}** ({pm.max():.2f}).")  # fmt: skip
    draw.prose(
        "An induction head cannot work alone: it matches the current token against *what came before each key*, "
        "and that is written there by the previous-token head. Zero the previous-token head and the induction head "
        "loses its target: its stripe fades, and the repeated half becomes as hard as the first. Zero another "
        "head and little changes."
    )
    base, cut = runs.ablation(name, -1, -1), runs.ablation(name, layer, head)
    best = int(pm.argmax())
    draw.metrics(
        ("Repeated half", f"{cut['loss_repeat']:.2f} nats", f"intact: {base['loss_repeat']:.2f}"),
        ("First half", f"{cut['loss_first']:.2f} nats", f"intact: {base['loss_first']:.2f}"),
        (f"{ind_head}'s prefix matching", f"{cut['prefix_matching'][-1, best]:.2f}",
         f"intact: {base['prefix_matching'][-1, best]:.2f}"),
    )  # fmt: skip
    left, right = st.columns([1.15, 1], gap="medium") if not talk() else st.columns([1.2, 1], gap="small")
    with left:
        draw.chart(draw.figure(_patterns, talk(), name, layer, head), "in_ablate_heads")
    with right:
        draw.chart(draw.figure(_losses, talk(), name, layer, head), "in_ablate_loss")
        if not talk():
            st.caption("The loss of each prediction, averaged over 32 held-out repeated sequences.")
