"""The page's controls, each declared once: the prompt (an example or your own), the head, the temperature."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui.page import example_or_own

from .prompts import EXAMPLES, OWN

N_LAYERS, N_HEADS = 18, 4  # gemma-3-270m; the tests check these against the loaded model's config
GLOBAL_LAYERS = (5, 11, 17)  # full causal; the others slide a window of 512 (checked against the config too)
LAYER_NAMES = {i: f"{i} (global)" if i in GLOBAL_LAYERS else str(i) for i in range(N_LAYERS)}


def prompt_controls(box: Any) -> str:
    """The example and the prompt, drawn in ``box``; returns the prompt.

    The prompt box's default is the chosen example's text, so a link names an example alone (``dc_ex=Code``)
    and carries a prompt only when it is the viewer's own."""
    picked, typed = example_or_own(EXAMPLES, OWN, "dc_ex", "dc_text")
    with box:
        c = st.columns([1, 3])
        ex = c[0].selectbox("Example", tuple(EXAMPLES), key="dc_ex", bind="query-params", on_change=picked,
                            help="The long diary is over 512 tokens: past the window of the local layers.")  # fmt: skip
        return c[1].text_area(
            "Prompt", EXAMPLES[ex], max_chars=6000, height=68, key="dc_text", bind="query-params", on_change=typed,
            help="Any text up to 1,000 tokens (the model reads a <bos> token first). Ctrl+Enter runs it.",
        )  # fmt: skip


def layer_control(box: Any) -> int:
    """The layer shown, drawn in ``box``."""
    return box.selectbox("Layer", range(N_LAYERS), 5, key="dc_layer", bind="query-params",
                         format_func=LAYER_NAMES.__getitem__,
                         help="Layers 5, 11 and 17 are global (full causal); the others see a window of 512.")


def head_control(box: Any) -> int:
    """The query head shown, drawn in ``box``."""
    return box.selectbox("Head", range(N_HEADS), 0, key="dc_head", bind="query-params",
                         help="One of the layer's four query heads; all four share one key and one value head.")


def temperature_control(box: Any) -> float:
    return box.slider("Temperature T", 0.0, 2.0, 1.0, 0.1, key="dc_temp", bind="query-params",
                      help="The logits are divided by T before the softmax: below 1 sharpens, above 1 flattens; "
                      "0 always picks the most likely token (greedy).")  # fmt: skip
