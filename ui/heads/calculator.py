"""The "KV-cache calculator" tab: the KV cache of published models against a GPU's memory."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from attention_core.device import format_bytes
from attention_core.kv_cache import BYTES_PER_VALUE, MODEL_SHAPES
from figures.heads import kilo, kv_cache_figure
from ui import draw
from ui.frame import talk
from ui.heads.data import fmt_int, fmt_tokens

MODELS = tuple(MODEL_SHAPES)
CONTEXTS = {kilo(2**p): 2**p for p in range(10, 18)}  # 1k … 128k, by what the slider shows and the link writes
CACHE_DTYPES = ("float16", "float32", "int8")
GPUS = {16: "T4", 24: "RTX 4090", 40: "A100 40GB", 48: "L40S", 80: "H100, A100 80GB", 141: "H200"}  # GB: a GPU


def cache_figure(model: str, ctx: int, batch: int, dtype: str, left: int, talk: bool) -> go.Figure:
    m = MODEL_SHAPES[model]
    mha, own = ([m.cache_bytes(t, batch, dtype, n_kv_heads=g) for t in CONTEXTS.values()] for g in (m.n_heads, None))
    return kv_cache_figure(tuple(CONTEXTS.values()), mha, own, chosen=ctx, budget_bytes=left,
                           model=model, n_heads=m.n_heads, n_kv_heads=m.n_kv_heads, talk=talk)  # fmt: skip


def calculator_tab(_: object) -> None:
    c = st.columns([2, 2.4, 1, 1.3, 1.3, 1.8] if talk() else [2, 3, 1.2, 1.5], vertical_alignment="bottom")
    c += [] if talk() else st.columns([3, 2], vertical_alignment="bottom")  # one row on a projector, two here
    model = c[0].selectbox("Model", MODELS, MODELS.index("Llama-3-8B"), key="hd_model", bind="query-params")
    ctx = CONTEXTS[c[1].select_slider("Context (tokens)", tuple(CONTEXTS), "8k", key="hd_ctx", bind="query-params")]
    batch = c[2].number_input("Batch", 1, 256, 1, key="hd_batch", bind="query-params",
                              help="Sequences decoded at once; each keeps its own cache.")  # fmt: skip
    dtype = c[3].selectbox("Cache dtype", CACHE_DTYPES, key="hd_dtype", bind="query-params")
    gpu = c[4].selectbox("GPU memory (GB)", tuple(GPUS), tuple(GPUS).index(80), key="hd_gpu", bind="query-params",
                         help="GB as GPU makers count them (10⁹ bytes). "
                         + "; ".join(f"{gb} GB: {names}" for gb, names in GPUS.items()) + ".")  # fmt: skip
    count_weights = c[5].toggle("Count the weights", True, key="hd_weights", bind="query-params",
                                help="Parameters × bytes per value of the cache dtype. Activations are not counted.")
    m = MODEL_SHAPES[model]
    weights = m.parameters * BYTES_PER_VALUE[dtype] if count_weights else 0
    left = gpu * 10**9 - weights
    mha, own = m.cache_bytes(ctx, batch, dtype, n_kv_heads=m.n_heads), m.cache_bytes(ctx, batch, dtype)
    fig = draw.figure(cache_figure, model, ctx, batch, dtype, left, talk())
    if talk():  # on a projector the figure comes first, under the controls
        draw.chart(fig, "hd_cache_fig", fit="heads.KV-cache calculator")
    st.latex(
        rf"2\cdot \underbrace{{{m.layers}}}_{{\text{{layers}}}}\cdot "
        rf"\underbrace{{{m.n_kv_heads}}}_{{\text{{K/V heads}}}}"
        rf"\cdot \underbrace{{{m.head_dim}}}_{{d_k}}\cdot \underbrace{{{fmt_int(ctx)}}}_{{\text{{context}}}}\cdot "
        rf"\underbrace{{{batch}}}_{{\text{{batch}}}}\cdot \underbrace{{{BYTES_PER_VALUE[dtype]}}}_{{\text{{bytes}}}}"
        rf" = \text{{{format_bytes(own)}}}"
    )
    fits, fits_mha = (m.longest_context(max(left, 0), batch, dtype, n_kv_heads=g) for g in (None, m.n_heads))
    draw.metrics(
        (f"MHA · {m.n_heads} K/V heads", format_bytes(mha), "without GQA"),
        (f"{m.name} · {m.n_kv_heads} K/V", format_bytes(own), f"{own / mha:.0%} of MHA" if own != mha else "it is MHA"),
        ("Longest context", fmt_tokens(fits) if left > 0 else "none",
         f"MHA: {fmt_tokens(fits_mha)}" if m.kind != "MHA" else "tokens",
         "In the memory left after the weights, for this batch."),
        (f"On {gpu} GB", "fits" if own <= left else "does not fit",
         f"{format_bytes(max(left, 0))} free for it" if weights else "the cache alone"),
        border=True,
    )  # fmt: skip
    if left <= 0:
        st.warning(
            f"{m.name}'s weights alone ({format_bytes(weights)} in {dtype}) exceed this GPU's memory; "
            "it would have to be split over several GPUs.",
            icon=":material/memory:",
        )
    if ctx > m.max_context:
        st.info(
            f"{m.name}'s published configuration declares {fmt_int(m.max_context)} positions; longer contexts "
            "are shown for the arithmetic.",
            icon=":material/info:",
        )
    if not talk():
        draw.chart(fig, "hd_cache_fig")
    shapes = st.expander("The published shapes", key="hd_shapes", on_change="rerun")
    if shapes.open:  # built only when opened
        shapes.caption(f"From each model's own configuration file; cache per token in {dtype}, one sequence.")
        shapes.dataframe([
            {"model": x.name, "attention": x.kind, "layers": x.layers, "query heads": x.n_heads,
             "K/V heads": x.n_kv_heads, "head dim": x.head_dim, "d_model": x.d_model,
             "cache per token": format_bytes(x.cache_bytes(1, 1, dtype)), "source": x.source}
            for x in MODEL_SHAPES.values()
        ], hide_index=True, width="stretch")  # fmt: skip
    draw.prose(
        "GB here are 10⁹ bytes, as GPU makers count; the cache sizes are in GiB (2³⁰ bytes). Mistral-7B's "
        "sliding window (4096) would let a rolling cache stop growing there; the calculator counts the full cache."
    )
