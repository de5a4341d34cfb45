"""Ablate tab: zero heads of the two-layer model and see which jobs and which predictions go with them."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from figures.induction import head_name, patterns_figure, position_loss_figure
from ui import draw
from ui.frame import talk
from ui.induction import runs
from ui.induction.train import titles_of

PREVIOUS = 0.2  # a layer-0 head with a previous-token score above this is opened zeroed


def _patterns(is_talk: bool, name: str, cut: tuple[tuple[int, int], ...]) -> Any:
    v, a = runs.view(name), runs.ablation(name, cut)
    titles, rows = titles_of(a.scores.previous_token, a.scores.prefix_matching)
    for layer, head in cut:
        titles[layer][head] = f"H{head}  zeroed"
    return patterns_figure(a.example.patterns, v.tokens, titles, row_titles=rows, half=v.half, talk=is_talk,
                           height=400 if is_talk else 420)  # fmt: skip


def _losses(is_talk: bool, name: str, cut: tuple[tuple[int, int], ...]) -> Any:
    v = runs.view(name)
    curves = {"intact": runs.ablation(name, ()).per_position}
    if cut:
        curves[", ".join(head_name(*c) for c in cut) + " zeroed"] = runs.ablation(name, cut).per_position
    return position_loss_figure(v.tokens, curves, half=v.half, talk=is_talk, height=300 if is_talk else 340)


def ablate_tab() -> None:
    name = runs.current("induction")
    v = runs.view(name)
    prev, pm = v.scores.previous_token[0], v.scores.prefix_matching[-1]
    best = int(pm.argmax())
    ind_head = head_name(v.layers - 1, best)
    prev_heads = [head_name(0, h) for h in range(v.heads) if prev[h] > PREVIOUS] or [head_name(0, int(prev.argmax()))]
    (c,) = draw.settings([2, 5])
    every = [head_name(*lh) for lh in np.ndindex(v.layers, v.heads)]
    chosen = c[0].multiselect("Zero these heads", every, default=prev_heads,
                              key="in_ablate", bind="query-params", placeholder="none: the intact model",
                              help="Their outputs are multiplied by 0; every other weight stays. It opens on the "
                              f"layer-0 heads whose previous-token score is above {PREVIOUS}.")  # fmt: skip
    cut = tuple(sorted((int(lay[1:]), int(h[1:])) for lay, h in (s.split() for s in chosen)))  # "L0 H2" → (0, 2)
    who = "the shipped two-layer model" if name.startswith("shipped:") else "your two-layer run"
    named = ", ".join(f"**{h}** ({prev[int(h[-1])]:.2f})" for h in prev_heads)
    c[1].markdown(f"On {who}. Its previous-token head{'s are' if len(prev_heads) > 1 else ' is'} {named}; its best "
                  f"induction head is **{ind_head}** ({pm[best]:.2f}).")  # fmt: skip
    draw.prose(
        "An induction head cannot work alone: it matches the current token against *what came before each key*, "
        "and that is written there by the previous-token head. Zero the previous-token head and the induction head "
        "loses its target: its stripe fades, and the repeated half becomes nearly as hard as the first. Some runs "
        "share that job between two heads: zero both. Zero another head and little changes."
    )
    base, out = runs.ablation(name, ()).scores, runs.ablation(name, cut).scores
    draw.metrics(
        ("Repeated half", f"{out.loss_repeat:.2f} nats", f"intact: {base.loss_repeat:.2f}"),
        ("First half", f"{out.loss_first:.2f} nats", f"intact: {base.loss_first:.2f}"),
        (f"{ind_head}'s prefix matching", f"{out.prefix_matching[-1, best]:.2f}",
         f"intact: {base.prefix_matching[-1, best]:.2f}"),
    )  # fmt: skip
    left, right = st.columns([1.15, 1], gap="medium") if not talk() else st.columns([1.2, 1], gap="small")
    with left:
        draw.chart(draw.figure(_patterns, talk(), name, cut), "in_ablate_heads")
    with right:
        draw.chart(draw.figure(_losses, talk(), name, cut), "in_ablate_loss")
        if not talk():
            st.caption("The loss of each prediction, averaged over 32 held-out repeated sequences.")
