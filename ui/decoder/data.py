"""The page's readings of the model, cached on plain values (the prompt's text, a temperature, k).

A prompt's forward keeps every layer's weights, ``(18, 4, n, n)``: 300 MB in float32 at 1024 tokens. What the
page keeps of it is small: each layer shrunk to at most 128 cells a side in float16 (2.4 MB), the grid's 24,
the first-token shares and the last position's logits (1 MB). So 8 prompts cost the server about 30 MB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st
import torch

from attention_core.decoder import probabilities, run_decoder
from figures.arrays import shrink
from figures.decoder import blank_blocked

from .model import decoder

GRID_SIDE = 24  # a grid tile is about 55 px wide: more cells would not show
LAYER_SIDE = 128  # one layer's heads, drawn large


def first_token_share(w: np.ndarray, window: int | None) -> np.ndarray:
    """Each head's mean weight on token 0, over the query rows that may see it (row 0 sees nothing else, and a
    row past a local layer's window cannot see it at all). ``w``: ``(H, n, n)``; returns ``(H,)``."""
    n = w.shape[-1]
    last = n if window is None else min(n, window)
    if last < 2:
        return np.zeros(w.shape[0], dtype=np.float32)
    return w[:, 1:last, 0].mean(axis=-1)  # (H, rows) -> (H,)


@dataclass(frozen=True)
class PromptReading:
    """What the page keeps of a prompt's forward (every weight float32 or float16, NaN where a mask blocks)."""

    tokens: list[str]
    logits: np.ndarray  # (vocab,): the last position's
    grid: np.ndarray  # (n_layers, H, m, m): every head shrunk to at most GRID_SIDE cells a side
    grid_block: int  # tokens a grid cell is the mean of, a side
    layers: list[np.ndarray]  # per layer (H, m, m) float16, at most LAYER_SIDE cells a side
    block: int  # tokens a layer's cell is the mean of, a side
    sinks: np.ndarray  # (n_layers, H): each head's share on the first token

    @property
    def n(self) -> int:
        return len(self.tokens)


@st.cache_data(max_entries=8, show_spinner="Running the model on this prompt…")
def prompt_data(text: str) -> PromptReading:
    """Tokens, the last position's logits, every layer's weights shrunk for drawing, and the first-token shares."""
    model = decoder()
    run = run_decoder(model, text)  # validates: ValueError for empty or too long text
    grid, layers, sinks = [], [], []
    for att in run.attentions:
        w = att.weights[0].detach().to("cpu", torch.float32).numpy()  # (H, n, n)
        window = None if att.is_global else model.config.window
        sinks.append(first_token_share(w, window))
        shown = blank_blocked(w, window=window)
        small, block = shrink(shown, LAYER_SIDE)
        layers.append(small.astype(np.float16))
        tile, grid_block = shrink(shown, GRID_SIDE)
        grid.append(tile)
    return PromptReading(list(run.tokens), run.logits[-1].detach().to("cpu", torch.float32).numpy(), np.stack(grid),
                         grid_block, layers, block, np.stack(sinks))  # fmt: skip


def softmax_t(logits: np.ndarray, temperature: float) -> np.ndarray:
    """The core's softmax(z / T) (T = 0: all weight on the largest logit), as float64 numpy."""
    return probabilities(torch.from_numpy(logits), temperature).double().numpy()


@dataclass(frozen=True)
class NextTokens:
    """The ``k`` likeliest next tokens, by logit, with their probabilities at one temperature."""

    tokens: list[str]
    probs: list[float]
    entropy: float  # bits, of the whole distribution
    rest: float  # the probability of every other token


@st.cache_data(max_entries=64, show_spinner=False)
def next_tokens(text: str, temperature: float, k: int) -> NextTokens:
    logits = prompt_data(text).logits
    p = softmax_t(logits, temperature)
    top = np.argsort(-logits, kind="stable")[:k]  # by logit: the same order at any T, and at T = 0 (ties at p = 0)
    nz = p[p > 0]
    return NextTokens(decoder().tokenizer.token_strings(top.tolist()), p[top].tolist(),
                      max(0.0, float(-(nz * np.log2(nz)).sum())), float(1.0 - p[top].sum()))  # fmt: skip


@st.cache_data(max_entries=4, show_spinner="Running the model again with the window switched off…")
def window_off_logits(text: str) -> np.ndarray:
    """The last position's logits with every layer full causal (the window switched off)."""
    run = run_decoder(decoder(), text, sliding_window=False)
    return run.logits[-1].detach().to("cpu", torch.float32).numpy()


@dataclass(frozen=True)
class WindowShift:
    """How far the next-token distribution moves when the window is switched off (at temperature 1)."""

    tokens: list[str]  # the likeliest with the window or without, most likely first
    p_on: list[float]
    p_off: list[float]
    tv: float  # total variation, ½ Σ|p − q|
    kl: float  # KL(window ‖ off), nats
    same_top: bool


@st.cache_data(max_entries=8, show_spinner=False)
def window_shift(text: str, k: int) -> WindowShift:
    p, q = softmax_t(prompt_data(text).logits, 1.0), softmax_t(window_off_logits(text), 1.0)
    top = list(dict.fromkeys([*np.argsort(-p)[:k].tolist(), *np.argsort(-q)[:k].tolist()]))[: k + 3]
    top.sort(key=lambda i: -max(p[i], q[i]))
    keep = p > 0
    return WindowShift(
        decoder().tokenizer.token_strings(top), p[top].tolist(), q[top].tolist(), float(0.5 * np.abs(p - q).sum()),
        float((p[keep] * (np.log(p[keep]) - np.log(np.maximum(q[keep], 1e-300)))).sum()),
        int(np.argmax(p)) == int(np.argmax(q)),
    )  # fmt: skip
