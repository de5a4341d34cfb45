"""The tabs that read one forward of the prompt: the next token, every head, the shared K/V, local against
global layers, and attention sinks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attention_core.device import format_bytes
from attention_core.kv_cache import kv_cache_bytes
from attention_core.presets import DECODER_MAX_TOKENS
from figures.decoder import (
    decoder_grid,
    next_token_figure,
    shared_kv_figure,
    shift_figure,
    sink_figure,
    token_label,
    window_figure,
)
from figures.heads import kv_cache_figure
from figures.model import head_label
from figures.style import PLOTLY_CONFIG
from ui import draw
from ui.frame import talk

from .controls import GLOBAL_LAYERS, N_HEADS, N_LAYERS, head_control, layer_control, temperature_control
from .data import next_tokens, prompt_data, window_shift
from .prompts import EXAMPLES, LONG_NAME

WALKTHROUGH = "app_pages/walkthrough.py"
DECODER_PRESET = "Gemma decoder"  # the walkthrough's name for its decoder preset, as links write it
WINDOW = 512
HEAD_DIM, BF16 = 256, "bfloat16"
MAX_CONTEXT = 32_768  # gemma-3-270m's context length (its file's context_length)
LOCAL_LAYERS = tuple(i for i in range(N_LAYERS) if i not in GLOBAL_LAYERS)
TOP_K = (5, 10, 15, 20)


# --------------------------------------------------------------------------------------------
# Figures from plain values, each built once (draw.figure)


def next_figure(text: str, temperature: float, k: int, talk: bool) -> go.Figure:
    d = next_tokens(text, temperature, k)
    return next_token_figure(d.tokens, d.probs, talk=talk)


def grid_figure(text: str, layer: int, head: int, talk: bool) -> go.Figure:
    d = prompt_data(text)
    return decoder_grid(d.grid, global_layers=GLOBAL_LAYERS, selected=(layer, head), block=d.grid_block, talk=talk)


def kv_figure(text: str, layer: int, head: int, talk: bool) -> go.Figure:
    d = prompt_data(text)
    w = d.layers[layer][head].astype(np.float32)  # (m, m)
    return shared_kv_figure(w, d.tokens if d.block == 1 else [], layer=layer, head=head, block=d.block,
                            scale=head == N_HEADS - 1, talk=talk)  # fmt: skip


def window_pair_figure(text: str, local: int, talk: bool) -> go.Figure:
    d = prompt_data(text)
    glob = next(g for g in GLOBAL_LAYERS if g > local)
    a, b = (d.layers[x].astype(np.float32) for x in (local, glob))  # (H, m, m)
    # The mean of the 4 heads: a blocked cell is NaN in every head (one mask for all), and stays NaN.
    return window_figure(a.mean(axis=0), b.mean(axis=0), local_layer=local, global_layer=glob, window=WINDOW,
                         block=d.block, talk=talk)  # fmt: skip


def cache_bytes(n: int, kv_heads: int = 1, *, rolling: bool = False) -> int:
    """gemma-3-270m's KV cache at ``n`` tokens in bfloat16; ``rolling``: its local layers keep only their window."""
    return sum(kv_cache_bytes(1, kv_heads, HEAD_DIM, min(n, WINDOW) if rolling and i not in GLOBAL_LAYERS else n, 1,
                              BF16) for i in range(N_LAYERS))  # fmt: skip


def cache_figure(n: int, talk: bool) -> go.Figure:
    contexts = sorted({n, *(2**p for p in range(8, 16))})
    mha, mqa = ([cache_bytes(t, g) for t in contexts] for g in (N_HEADS, 1))
    return kv_cache_figure(contexts, mha, mqa, chosen=n, budget_bytes=None, model="gemma-3-270m", n_heads=N_HEADS,
                           n_kv_heads=1, talk=talk)  # fmt: skip


def shift_fig(text: str, k: int, talk: bool) -> go.Figure:
    d = window_shift(text, k)
    return shift_figure(d.tokens, d.p_on, d.p_off, window=WINDOW, talk=talk)


def sinks_fig(text: str, talk: bool) -> go.Figure:
    d = prompt_data(text)
    return sink_figure(d.sinks, global_layers=GLOBAL_LAYERS, talk=talk)


# --------------------------------------------------------------------------------------------
# Tabs


def next_token_tab(text: str) -> None:
    box = draw.settings([2, 1])[0]
    temperature = temperature_control(box[0])
    k = box[1].select_slider("Top k shown", TOP_K, 10, key="dc_k", bind="query-params")
    d = next_tokens(text, temperature, k)
    c = st.columns([3, 2], vertical_alignment="top")
    with c[0]:
        draw.chart(draw.figure(next_figure, text, temperature, k, talk()), "dc_next")
    with c[1]:
        st.latex(r"p_i = \frac{e^{z_i / T}}{\sum_{j=1}^{262\,144} e^{z_j / T}}")
        greedy = "T = 0: the most likely token every time (greedy)." if temperature == 0 else ""
        draw.metrics(("Most likely next", token_label(d.tokens[0], 20), f"{d.probs[0]:.1%}"),
                     ("Entropy", f"{d.entropy:.2f} bits", greedy or "of the whole distribution"))  # fmt: skip
        draw.prose(
            f"The model's last position scores all 262,144 tokens of its vocabulary (the logits z); softmax turns "
            f"them into probabilities. The {k} bars hold {1 - d.rest:.1%} of the probability; the other "
            f"{262_144 - k:,} tokens share the remaining {d.rest:.1%}. A sampler draws the next token from "
            "this distribution; the **Write** tab does it again and again."
        )


def heads_tab(text: str) -> None:
    d = prompt_data(text)
    draw.prose(
        "Each small triangle is one head's weights on this prompt: row = the token that asks, column = the token it "
        "reads (darker = more). Nothing lies above the diagonal: a decoder's token never sees the tokens after it. "
        "Columns are the 18 layers, rows the 4 query heads of each. **Click a head** to open it in the walkthrough "
        "with its real Q, K and V, or choose it below."
        + (f" Each cell here is the mean of {d.grid_block}×{d.grid_block} tokens." if d.grid_block > 1 else "")
    )
    grid = st.container()
    c = st.columns([1, 1, 3], vertical_alignment="bottom")
    layer, head = layer_control(c[0]), head_control(c[1])
    query = walkthrough_query(text, layer, head)
    if d.n <= DECODER_MAX_TOKENS:  # the walkthrough writes every number of a head's n × n matrices
        c[2].page_link(WALKTHROUGH, label=f"Open {head_label(layer, head)} in the walkthrough: its Q, K, V through "
                       "the five steps", icon=":material/stairs:", query_params=query)  # fmt: skip
    else:
        c[2].caption(f"The walkthrough draws a head's matrices number by number, for prompts of up to "
                     f"{DECODER_MAX_TOKENS} tokens; this one has {d.n}.")  # fmt: skip
    with grid:  # above its controls, drawn with their values
        event = draw.chart(draw.figure(grid_figure, text, layer, head, talk()), "dc_grid", on_select="rerun",
                           selection_mode="points", config={**PLOTLY_CONFIG, "displayModeBar": False})  # fmt: skip
    points = [p for p in (event.selection.points if event else []) if p.get("curve_number") == 1]
    if points and d.n <= DECODER_MAX_TOKENS:  # a click on a tile: that head, in the walkthrough
        layer, head = divmod(int(points[0]["point_index"]), N_HEADS)
        st.switch_page(WALKTHROUGH, query_params=walkthrough_query(text, layer, head))


def walkthrough_query(text: str, layer: int, head: int) -> dict[str, str]:
    """The walkthrough's link to one head, with the causal mask the model uses."""
    return {"preset": DECODER_PRESET, "mask": "Causal", "text": text, "dlayer": str(layer), "dhead": str(head)}


def shared_kv_tab(text: str) -> None:
    d = prompt_data(text)
    c = st.columns([1, 4], vertical_alignment="bottom")
    layer = layer_control(c[0])
    c[1].latex(r"o_h = \operatorname{softmax}\!\left(\frac{q_h K^\top}{\sqrt{256}}\right) V,\quad h = 0,1,2,3:"
               r"\ \text{one } K,\ \text{one } V \text{ for all four}")  # fmt: skip
    draw.prose(
        "gemma-3-270m has **multi-query attention**: in every layer four query heads read **one** key head and "
        "**one** value head. The four patterns below differ only because their queries differ; the keys they are "
        "compared with, and the values they blend, are the same numbers."
        + (f" Each cell is the mean of {d.block}×{d.block} tokens." if d.block > 1 else "")
    )
    draw.panels([draw.figure(kv_figure, text, layer, h, talk()) for h in range(N_HEADS)],  # one colour bar: the last
                [f"dc_kv{h}" for h in range(N_HEADS)])
    n = d.n
    mqa, mha, rolling = cache_bytes(n), cache_bytes(n, N_HEADS), cache_bytes(n, rolling=True)
    full, full_rolling = cache_bytes(MAX_CONTEXT), cache_bytes(MAX_CONTEXT, rolling=True)
    st.markdown(f"**This prompt's KV cache** ({n} tokens, bfloat16)")
    draw.metrics(
        ("One K/V head (the model)", format_bytes(mqa), f"2 · 18 layers · 1 · 256 · {n} · 2 B"),
        ("One K/V per query head", format_bytes(mha), f"{N_HEADS}× as much: multi-head attention"),
        ("Rolling window on local layers", format_bytes(rolling), "15 layers keep only their last 512 tokens"),
        border=True,
    )  # fmt: skip
    draw.prose(
        f"At the model's full context of {MAX_CONTEXT:,} tokens: {format_bytes(full)} with one K/V head, "
        f"{format_bytes(4 * full)} with four, and {format_bytes(full_rolling)} if the 15 local layers keep only "
        "their window: the two savings together are why small models can run long contexts on a phone."
    )
    draw.chart(draw.figure(cache_figure, n, talk()), "dc_cache")
    st.page_link("app_pages/heads.py", label="Compare with Llama, Mistral and others in the KV-cache calculator",
                 icon=":material/calculate:", query_params={"hd_tab": "KV-cache calculator"})  # fmt: skip


def _use_long() -> None:
    st.session_state.dc_ex = LONG_NAME
    st.session_state.dc_text = EXAMPLES[LONG_NAME]


def window_tab(text: str) -> None:
    d = prompt_data(text)
    n = d.n
    (c,) = draw.settings([1, 1, 2])
    local = c[0].selectbox("Local layer", LOCAL_LAYERS, 4, key="dc_local", bind="query-params",
                           help="Shown beside the next global layer.")  # fmt: skip
    off = c[1].toggle("Switch the window off", key="dc_nowin", bind="query-params",
                      help="Run the model again with every layer full causal, and compare the next token.")
    draw.prose(
        "Fifteen of the 18 layers use a **sliding window**: a token reads only the 512 tokens up to itself. The "
        "other three (5, 11, 17) are **global**: full causal attention. Local layers are cheap (their cache stops "
        "growing at 512 tokens) and global ones carry what lies further back."
    )
    if n <= WINDOW:
        st.info(f"This prompt has {n} tokens, no more than the window of {WINDOW}: every local layer still sees "
                "every earlier token, so local and global layers differ only in what they learned. Choose the long "
                "diary to see the window.", icon=":material/info:")  # fmt: skip
        st.button("Use the long diary", key="dc_uselong", on_click=_use_long, icon=":material/article:")
    draw.chart(draw.figure(window_pair_figure, text, local, talk()), "dc_window")
    if d.block > 1:
        st.caption(f"Each cell: the mean weight of {d.block}×{d.block} tokens, averaged over the 4 heads, on a "
                   "square-root colour scale (a long row's weights are small). The dashed line is the window's edge: "
                   "left of it, a local layer cannot look.")  # fmt: skip
    if not off:
        return
    if n <= WINDOW:
        st.markdown("With this prompt, switching the window off changes nothing: no token is more than 512 back.")
        return
    k = 8
    s = window_shift(text, k)
    draw.chart(draw.figure(shift_fig, text, k, talk()), "dc_shift")
    draw.metrics(
        ("Probability moved", f"{s.tv:.1%}", "total variation: ½ Σ|p − q|"),
        ("KL(window ‖ off)", f"{s.kl:.3f} nats", None),
        ("Most likely token", "unchanged" if s.same_top else "changed", None),
        border=True,
    )  # fmt: skip
    draw.prose(
        "This is a real model's answer to the Beyond n² page's question, how much does a window lose: the model was "
        "trained with the window, so switching it off is not a free improvement: its local layers meet distances "
        "they never saw in training."
    )


@dataclass(frozen=True)
class EncoderSinks:
    """all-MiniLM-L6-v2's mean share on [CLS] and on [SEP], and whether it read the prompt itself."""

    cls: float
    sep: float
    same: bool


@st.cache_data(max_entries=8, show_spinner="Reading the encoder's sinks on this prompt…")
def encoder_sinks(text: str) -> EncoderSinks:
    """On ``text``, or on the encoder's own default sentence if ``text`` is too long for it."""
    from attention_core.bert.analysis import sentence_weights, sink_shares
    from attention_core.bert.tokens import MAX_TOKENS, tokenize
    from attention_core.presets import MODEL_TEXT
    from ui.model import encoder

    bert = encoder()
    try:
        used = text if len(tokenize(bert.tokenizer, text).tokens) <= MAX_TOKENS else MODEL_TEXT
    except ValueError:
        used = MODEL_TEXT
    _, w = sentence_weights(bert, used)
    cls, sep = sink_shares(w)
    return EncoderSinks(float(cls.mean()), float(sep.mean()), used == text)


def sinks_tab(text: str) -> None:
    draw.prose(
        "An **attention sink** is a token that takes the weight a head has no use for: softmax hands out a total "
        "of 1 in every row, so a head with nothing to pick up parks it somewhere harmless. In decoders that place "
        "is the first token (here `<bos>`): every later token can see it, so it is always there to take the rest."
    )
    s = prompt_data(text).sinks  # (n_layers, H)
    local, glob = (float(s[list(layers)].mean()) for layers in (LOCAL_LAYERS, GLOBAL_LAYERS))
    draw.chart(draw.figure(sinks_fig, text, talk()), "dc_sinks")
    layer, head = np.unravel_index(int(np.argmax(s)), s.shape)
    st.markdown(
        f"On this prompt the local layers put **{local:.0%}** of their attention on the first token, the "
        f"global layers **{glob:.0%}**; the heaviest sink is **{head_label(int(layer), int(head))}** with "
        f"{s[layer, head]:.2f}. Shares are over the rows that can see the first token (after it, and within a local "
        "layer's window)."
    )
    if not talk():
        e = encoder_sinks(text)
        where = "on this prompt" if e.same else "on its own default sentence (this prompt is too long for it)"
        st.markdown(
            f"**The encoder, for comparison:** all-MiniLM-L6-v2 {where} puts {e.cls:.0%} on [CLS] and "
            f"{e.sep:.0%} on [SEP]. It sees the whole sentence, so its sink can also be the last token."
        )
        st.page_link("app_pages/model.py", label="The encoder's sinks, head by head, on the Real attention page",
                     icon=":material/psychology:")  # fmt: skip
