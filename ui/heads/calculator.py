"""The "KV-cache calculator" tab: the KV cache of published models against a GPU's memory."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attention_core.bench import format_bytes
from attention_core.kv_cache import MODEL_SHAPES, kv_cache_bytes, max_context_that_fits
from figures.heads import kv_cache_figure
from ui.heads.common import fmt_int, fmt_tokens, plot, prose, snap

MODELS = tuple(MODEL_SHAPES)
CONTEXTS = tuple(2**p for p in range(10, 18))  # 1k … 128k
CACHE_DTYPES = ("float16", "float32", "int8")
GPUS = {
    "16": "16 GB",
    "24": "24 GB (RTX 4090)",
    "40": "40 GB (A100 40GB)",
    "48": "48 GB (L40S)",
    "80": "80 GB (H100, A100 80GB)",
    "141": "141 GB (H200)",
}
WEIGHT_BYTES = {"float16": 2, "float32": 4, "int8": 1}


def calculator_tab(talk: bool) -> None:
    snap("hd_ctx", CONTEXTS)
    c = st.columns([2, 3, 1.2, 1.5])
    c[0].selectbox("Model", MODELS, key="hd_model")
    c[1].select_slider("Context (tokens)", options=CONTEXTS, key="hd_ctx", format_func=lambda t: f"{t // 1024}k")
    c[2].number_input(
        "Batch",
        min_value=1,
        max_value=256,
        step=1,
        key="hd_batch",
        help="Sequences decoded at once; each keeps its own cache.",
    )
    c[3].selectbox("Cache dtype", CACHE_DTYPES, key="hd_dtype")
    c = st.columns([3, 2])
    c[0].selectbox("GPU memory", tuple(GPUS), key="hd_gpu", format_func=GPUS.get)
    c[1].toggle(
        "Count the weights too",
        key="hd_weights",
        help="Parameters × bytes per value of the cache dtype. Activations are not counted.",
    )
    s = st.session_state
    m = MODEL_SHAPES[str(s["hd_model"])]
    ctx, batch, dtype = int(s["hd_ctx"]), int(s["hd_batch"]), str(s["hd_dtype"])
    gpu = int(s["hd_gpu"]) * 10**9
    weights = m.parameters * WEIGHT_BYTES[dtype] if s["hd_weights"] else 0
    left = gpu - weights
    mha = kv_cache_bytes(m.layers, m.n_heads, m.head_dim, ctx, batch, dtype)
    own = kv_cache_bytes(m.layers, m.n_kv_heads, m.head_dim, ctx, batch, dtype)
    st.latex(
        rf"2\cdot \underbrace{{{m.layers}}}_{{\text{{layers}}}}\cdot "
        rf"\underbrace{{{m.n_kv_heads}}}_{{\text{{K/V heads}}}}"
        rf"\cdot \underbrace{{{m.head_dim}}}_{{d_k}}\cdot \underbrace{{{fmt_int(ctx)}}}_{{\text{{context}}}}\cdot "
        rf"\underbrace{{{batch}}}_{{\text{{batch}}}}\cdot \underbrace{{{WEIGHT_BYTES[dtype]}}}_{{\text{{bytes}}}}"
        + r" = \text{"
        + format_bytes(own)
        + "}"
    )
    c = st.columns(4)
    c[0].metric(f"MHA · {m.n_heads} K/V heads", format_bytes(mha), "without GQA", delta_color="off",
                delta_arrow="off", border=True)  # fmt: skip
    c[1].metric(
        f"{m.name} · {m.n_kv_heads} K/V",
        format_bytes(own),
        f"{own / mha:.0%} of MHA" if own != mha else "it is MHA",
        delta_color="off",
        delta_arrow="off",
        border=True,
    )
    fits_own = max_context_that_fits(max(left, 0), m.layers, m.n_kv_heads, m.head_dim, batch, dtype)
    fits_mha = max_context_that_fits(max(left, 0), m.layers, m.n_heads, m.head_dim, batch, dtype)
    c[2].metric(
        "Longest context",
        fmt_tokens(fits_own) if left > 0 else "none",
        f"MHA: {fmt_tokens(fits_mha)}" if m.kind != "MHA" else "tokens",
        delta_color="off",
        delta_arrow="off",
        border=True,
        help="In the memory left after the weights, for this batch.",
    )
    verdict = "fits" if left > 0 and own <= left else "does not fit"
    c[3].metric(
        f"On {GPUS[str(s['hd_gpu'])].split(' (')[0]}",
        verdict,
        f"{format_bytes(max(left, 0))} free for it" if weights else "the cache alone",
        delta_color="off",
        delta_arrow="off",
        border=True,
    )
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
    mha_all = [kv_cache_bytes(m.layers, m.n_heads, m.head_dim, t, batch, dtype) for t in CONTEXTS]
    own_all = [kv_cache_bytes(m.layers, m.n_kv_heads, m.head_dim, t, batch, dtype) for t in CONTEXTS]
    plot(
        ("cache", m.name, ctx, batch, dtype, left, talk),
        lambda: kv_cache_figure(
            CONTEXTS,
            mha_all,
            own_all,
            chosen=ctx,
            budget_bytes=left if left > 0 else None,
            model=m.name,
            n_heads=m.n_heads,
            n_kv_heads=m.n_kv_heads,
            talk=talk,
        ),
        chart_key="hd_cache_fig",
    )
    table = pd.DataFrame(
        [
            {
                "model": x.name,
                "attention": x.kind,
                "layers": x.layers,
                "query heads": x.n_heads,
                "K/V heads": x.n_kv_heads,
                "head dim": x.head_dim,
                "d_model": x.d_model,
                "cache per token": format_bytes(x.cache_bytes(1, 1, dtype)),
                "source": x.source,
            }
            for x in MODEL_SHAPES.values()
        ]
    )
    with st.expander("The published shapes", expanded=False):
        st.caption(f"From each model's own configuration file; cache per token in {dtype}, one sequence.")
        st.dataframe(table, hide_index=True, width="stretch")
    prose(
        talk,
        "GB here are 10⁹ bytes, as GPU makers count; the cache sizes are in GiB (2³⁰ bytes). Mistral-7B's "
        "sliding window (4096) would let a rolling cache stop growing there; the calculator counts the full cache.",
    )
