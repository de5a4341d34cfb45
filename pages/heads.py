"""Heads: multi-head, grouped-query and multi-query attention, and decoding with a KV cache."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention_core import (
    D_MODELS,
    MODEL_SHAPES,
    decode_example,
    heads_example,
    kv_cache_bytes,
    kv_head_of,
    max_context_that_fits,
    split_snippet,
    time_decode_steps,
)
from attention_core.bench import format_bytes
from figures.heads import (
    decode_steps_figure,
    decode_timing_figure,
    heads_grid,
    kv_cache_figure,
    sharing_figure,
    split_figure,
)
from figures.style import PLOTLY_CONFIG
from ui import urlstate, viewport
from ui.params import BoolParam, ChoiceParam, IntParam

TABS = ("Split", "Heads side by side", "MHA → GQA → MQA", "KV-cache calculator", "Decode")
HEAD_CHOICES = (1, 2, 4, 8)
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
MEASURE_MAX = (2048, 4096, 8192, 16384)
MEASURE_DM = (64, 128, 256)
N_TOKENS = 11  # the sentence preset

PARAMS = [
    ChoiceParam("hd_tab", TABS[0], TABS, label="tab"),
    IntParam("hd_dm", 32, 16, 64, label="d_model"),
    IntParam("hd_h", 4, 1, 8, label="heads"),
    IntParam("hd_kv", 2, 1, 8, label="K/V heads"),
    IntParam("hd_seed", 0, 0, 9999, label="seed"),
    BoolParam("hd_causal", False, label="causal"),
    ChoiceParam("hd_model", "Llama-3-8B", MODELS, label="model"),
    IntParam("hd_ctx", 8192, 1024, 131072, label="context"),
    IntParam("hd_batch", 1, 1, 256, label="batch"),
    ChoiceParam("hd_dtype", "float16", CACHE_DTYPES, label="cache dtype"),
    ChoiceParam("hd_gpu", "80", tuple(GPUS), label="GPU memory"),
    BoolParam("hd_weights", True, label="count the weights"),
    IntParam("hd_step", 7, 0, N_TOKENS - 1, label="decode step"),
    IntParam("hd_dhead", 0, 0, 7, label="decode head"),
    IntParam("hd_tmax", 8192, 2048, 16384, label="longest context measured"),
    IntParam("hd_tdm", 128, 64, 256, label="d_model measured"),
]
USES_SHARED = {"Split", "Heads side by side", "MHA → GQA → MQA", "Decode"}


# ---------------------------------------------------------------------------------------------
# Cached computations: plain arguments in, numpy and plain values out


@st.cache_data(max_entries=256, show_spinner=False)
def example_data(d_model: int, n_heads: int, n_kv_heads: int, seed: int, causal: bool) -> dict[str, Any]:
    e = heads_example(d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, seed=seed, causal=causal)
    return {
        "tokens": list(e.tokens),
        "weights_mha": e.weights_mha.numpy(),
        "weights_gqa": e.weights_gqa.numpy(),
        "max_abs_diff": e.max_abs_diff,
        "rel_diff": e.rel_diff,
        "delta_torch": e.delta_torch,
        "params_mha": e.params_mha,
        "params_gqa": e.params_gqa,
        "d_k": e.d_k,
    }


@st.cache_data(max_entries=64, show_spinner=False)
def q_data(d_model: int, n_heads: int, seed: int) -> np.ndarray:
    from attention_core import example_weights, sentence_example

    x = sentence_example(d_model=d_model, d_k=4, d_v=4, seed=seed, positions=True).x_q  # (L, d_model)
    return (x @ example_weights(d_model, n_heads, seed)[0]).numpy()  # (L, d_model)


@st.cache_data(max_entries=128, show_spinner=False)
def decode_data(d_model: int, n_heads: int, n_kv_heads: int, seed: int) -> dict[str, Any]:
    d = decode_example(d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, seed=seed)
    return {
        "tokens": list(d.tokens),
        "weights": [w.numpy() for w in d.weights],
        "max_abs_diff": d.max_abs_diff,
        "d_k": d.d_k,
    }


@st.cache_data(max_entries=32, show_spinner=False, ttl=3600)
def timing_data(t_max: int, d_model: int, run: int) -> dict[str, Any]:
    """One live measurement per setting (and per press of "Measure again"), shared by every viewer."""
    contexts = tuple(t for t in (128, 256, 512, 1024, 2048, 4096, 8192, 16384) if t <= t_max)
    r = time_decode_steps(contexts, d_model=d_model, n_heads=4)
    return {
        "cached": r.points("cached"),
        "recompute": r.points("recompute"),
        "fits": {k: r.fit(k) for k in ("cached", "recompute")},
        "wall_s": r.wall_s,
        "threads": r.threads,
        "max_abs_diff": r.max_abs_diff,
        "skipped": [c for c, t, u in zip(r.contexts, r.recompute_s, r.cached_s, strict=True) if t is None and u],
        "unfinished": [c for c, t in zip(r.contexts, r.cached_s, strict=True) if t is None],
        "when": time.strftime("%H:%M:%S"),
    }


# ---------------------------------------------------------------------------------------------
# Small helpers (as on the √d_k explorer)


@st.cache_resource(max_entries=256, show_spinner=False)
def _figure(key: tuple[Any, ...], _make: Callable[[], go.Figure]) -> go.Figure:
    return _make()


# px above each tab's first figure in talk mode (settings row, tab bar, formula, the tab's own controls),
# read off screenshots at 1280×720; benchmarks/rehearsal.py flags a figure that no longer fits.
TALK_ABOVE = {"Split": 250, "Heads side by side": 330, "Decode": 370}
TALK_ABOVE_DEFAULT = 330


def plot(cache_key: tuple[Any, ...], make: Callable[[], go.Figure], chart_key: str) -> None:
    """Draw ``make()``, built once per ``cache_key`` (which names everything the figure depends on).

    In talk mode the figure is no taller than the window leaves, so it fits a projector without scrolling.
    """
    if urlstate.talk_mode():
        natural = int(_figure(cache_key, _make=make).layout.height or 450)
        above = TALK_ABOVE.get(str(st.session_state.get("hd_tab")), TALK_ABOVE_DEFAULT)
        height = viewport.fit_height(above, natural=natural, low=220)
        fig = _figure((*cache_key, "talk-fit", height), _make=lambda: make().update_layout(height=height))
    else:
        fig = _figure(cache_key, _make=make)
    st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key=chart_key)


def prose(talk: bool, *paragraphs: str) -> None:
    if not talk:
        for p in paragraphs:
            st.markdown(p)


def snap(key: str, choices: tuple[int, ...]) -> None:
    """Before a select_slider: move a URL value (or a stale one) to the nearest choice on a log scale."""
    value = st.session_state.get(key)
    if value in choices:
        return
    try:
        target = math.log(max(float(value), 1e-9))
        st.session_state[key] = min(choices, key=lambda c: abs(math.log(c) - target))
    except (TypeError, ValueError):
        st.session_state[key] = choices[0]


def divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def fmt_int(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def fmt_tokens(n: int) -> str:
    """A token count for a metric: 487 819 → "488k", 2 400 000 → "2.4M"."""
    if n >= 10**6:
        return f"{n / 10**6:.1f}M"
    if n >= 10**4:
        return f"{n / 1000:.0f}k"
    return fmt_int(n)


# ---------------------------------------------------------------------------------------------
# Controls


def shared_controls(tab: str, talk: bool) -> tuple[int, int, int, bool]:
    """d_model, query heads, seed and the causal mask: above the tabs, disabled where unused.

    In talk mode they fold into a "Settings" popover beside a one-line summary, as on the
    walkthrough, so the figures start higher on a projector.
    """
    snap("hd_dm", D_MODELS)
    snap("hd_h", HEAD_CHOICES)
    off = tab not in USES_SHARED
    s = st.session_state
    if talk:
        top = st.columns([1, 4], vertical_alignment="center")
        box = top[0].popover("Settings", icon=":material/tune:", width="stretch")
        top[1].markdown(
            f"d_model = {s['hd_dm']} · h = {s['hd_h']} heads · seed {s['hd_seed']}"
            + (" · causal" if s["hd_causal"] else "")
            if not off
            else "These settings belong to the other tabs."
        )
    else:
        box = st.container(border=True)
    with box:
        c = [st.container() for _ in range(4)] if talk else st.columns([2, 2, 1, 1.3])
        c[0].select_slider(
            "Model width d_model",
            options=D_MODELS,
            key="hd_dm",
            disabled=off,
            help="The width of each token vector, and of Q, K and V before the split.",
        )
        c[1].select_slider(
            "Query heads h",
            options=HEAD_CHOICES,
            key="hd_h",
            disabled=off,
            help="d_model is cut into h heads of d_k = d_model / h features each.",
        )
        c[2].number_input(
            "Seed",
            min_value=0,
            max_value=9999,
            step=1,
            key="hd_seed",
            disabled=off,
            help="Seeds the word vectors and the random projections.",
        )
        c[3].toggle(
            "Causal mask",
            key="hd_causal",
            disabled=off or tab == "Decode",
            help="Each token sees only itself and earlier tokens, as in a decoder.",
        )
    s = st.session_state
    return int(s["hd_dm"]), int(s["hd_h"]), int(s["hd_seed"]), bool(s["hd_causal"])


def kv_heads_control(n_heads: int) -> int:
    """The K/V-heads slider: only divisors of h. A value from the link that is not one is explained."""
    options = divisors(n_heads)
    value = st.session_state.get("hd_kv")
    if value not in options:
        try:
            wanted = int(value)
        except (TypeError, ValueError):
            wanted = n_heads
        fitted = max(d for d in options if d <= max(wanted, 1))
        if wanted <= n_heads:  # above h is simply clamped; a non-divisor deserves a sentence
            st.warning(
                f"{wanted} K/V heads cannot serve {n_heads} query heads evenly: the number of K/V heads must "
                f"divide the number of query heads ({', '.join(map(str, options))}). Showing {fitted}.",
                icon=":material/info:",
            )
        st.session_state["hd_kv"] = fitted
    names = {n_heads: "MHA", 1: "MQA"}
    st.select_slider(
        "K/V heads g",
        options=options,
        key="hd_kv",
        format_func=lambda g: f"{g} ({names.get(g, 'GQA')})",
        help="How many K/V heads the query heads share: h is multi-head, 1 is multi-query, "
        "a divisor in between is grouped-query attention.",
    )
    return int(st.session_state["hd_kv"])


# ---------------------------------------------------------------------------------------------
# Tabs


def split_tab(d_model: int, n_heads: int, seed: int, causal: bool, talk: bool) -> None:
    d_k = d_model // n_heads
    st.latex(
        rf"Q \in \mathbb{{R}}^{{{N_TOKENS}\times {d_model}}} \longrightarrow "
        rf"Q_1,\dots,Q_{{{n_heads}}} \in \mathbb{{R}}^{{{N_TOKENS}\times {d_k}}},\quad "
        rf"d_k = \tfrac{{{d_model}}}{{{n_heads}}} = {d_k}"
    )
    prose(
        talk,
        f"Multi-head attention does not make h bigger projections: it cuts the one d_model-wide Q, K and V into "
        f"h slices of d_k = d_model / h features. Each slice is a head with its own scores and its own softmax. "
        f"The cost stays that of one head of width d_model; what changes is that {n_heads} separate weight "
        f"patterns can form. Afterwards the heads' outputs are laid side by side again and W_o mixes them.",
    )
    plot(
        ("split", d_model, n_heads, seed, talk),
        lambda: split_figure(
            q_data(d_model, n_heads, seed),
            example_data(d_model, n_heads, n_heads, seed, causal)["tokens"],
            n_heads,
            talk=talk,
        ),
        chart_key="hd_split_fig",
    )
    st.markdown("**The split in code, with the shapes of these settings** (nanoGPT's habit: a shape after each line)")
    st.code(split_snippet(N_TOKENS, d_model, n_heads), language="python")


def heads_tab(d_model: int, n_heads: int, seed: int, causal: bool, talk: bool) -> None:
    d = example_data(d_model, n_heads, n_heads, seed, causal)
    st.latex(
        r"\operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_k}}\right)V_i,\qquad "
        r"O = [\operatorname{head}_1;\dots;\operatorname{head}_h]\,W_O"
    )
    if talk:
        st.markdown("**Here the heads differ only by chance:** the projections are random, not trained.")
    else:
        st.markdown(
            f"**What differs between the heads here is chance.** W_Q, W_K and W_V are random (seed {seed}), "
            "not trained, so each head's slice of them is a different random projection and its weights differ "
            "at random. In a trained model the heads specialise (one follows the previous token, one links a "
            "pronoun to its noun); nothing here has learned to."
        )
    kv = [kv_head_of(i, n_heads, n_heads) for i in range(n_heads)]
    cols = 2 if talk else 4
    plot(
        ("grid", d_model, n_heads, seed, causal, talk),
        lambda: heads_grid(d["weights_mha"], d["tokens"], kv, columns=cols, talk=talk),
        chart_key="hd_grid_fig",
    )
    it = d["tokens"].index("it")
    tops = [d["tokens"][int(np.argmax(d["weights_mha"][i, it]))] for i in range(n_heads)]
    share = [float(np.max(d["weights_mha"][i, it])) for i in range(n_heads)]
    st.markdown(
        "**Where “it” looks, head by head:** "
        + " · ".join(f"head {i}: “{t}” {s:.0%}" for i, (t, s) in enumerate(zip(tops, share, strict=True)))
    )
    prose(talk, "Change the seed: the pattern of every head changes, because it only ever came from the draw.")


def gqa_tab(d_model: int, n_heads: int, seed: int, causal: bool, talk: bool) -> None:
    g = kv_heads_control(n_heads)
    d = example_data(d_model, n_heads, g, seed, causal)
    d_k = d["d_k"]
    st.latex(
        rf"\text{{query head }} i \text{{ reads K/V head }} \left\lfloor i \,/\, \tfrac{{h}}{{g}} \right\rfloor"
        rf"\qquad h = {n_heads},\ g = {g}"
    )
    plot(("share", n_heads, g, talk), lambda: sharing_figure(n_heads, g, talk=talk), chart_key="hd_share_fig")
    kv_token = 2 * g * d_k * 4  # float32 K and V of one token, one layer
    kv_token_mha = 2 * n_heads * d_k * 4
    c = st.columns(4)
    c[0].metric(
        "Attention weights",
        fmt_int(d["params_gqa"]),
        f"{d['params_gqa'] / d['params_mha']:.0%} of MHA's {fmt_int(d['params_mha'])}",
        delta_color="off",
        delta_arrow="off",
        border=True,
        help="W_Q, W_K, W_V and W_O of one attention block, no biases.",
    )
    c[1].metric(
        "KV cache per token",
        f"{kv_token} B",
        f"{kv_token / kv_token_mha:.0%} of MHA's {kv_token_mha} B",
        delta_color="off",
        delta_arrow="off",
        border=True,
        help="K and V of one token in one layer, float32.",
    )
    c[2].metric(
        "Output |Δ| vs MHA",
        f"{d['max_abs_diff']:.3g}",
        f"relative ‖Δ‖/‖O‖ = {d['rel_diff']:.2f}",
        delta_color="off",
        delta_arrow="off",
        border=True,
        help="The same W_Q and W_O; K/V projections mean-pooled within each group.",
    )
    c[3].metric(
        "|Δ| vs torch SDPA",
        f"{d['delta_torch']:.0e}",
        "enable_gqa=True",
        delta_color="off",
        delta_arrow="off",
        border=True,
        help="This page's grouped-query output against torch.nn.functional.scaled_dot_product_attention.",
    )
    prose(
        talk,
        "**How the grouped weights are made.** Start from the multi-head model on the other tabs. Keep W_Q and "
        "W_O. For each group of h/g query heads, average the group's K projections into one K head, and the V "
        "projections into one V head. That is the conversion of the GQA paper (Ainslie et al., 2023); since a "
        "projection is linear, averaging the weights averages the heads' keys. With g = h nothing changes and "
        "the difference is 0.",
    )
    if g < n_heads:
        prose(
            talk,
            f"**Why the difference is large here.** These heads are random, so the average of {n_heads // g} "
            'unrelated heads is close to none of them. The paper therefore continues training ("uptraining") for '
            "about 5% of the original pre-training to recover the quality. What GQA buys is in the two numbers on "
            f"the left: W_K and W_V shrink by {1 - g / n_heads:.0%}, and so does the KV cache, which at long "
            "contexts is what fills a GPU (see the calculator tab).",
        )
    plot(
        ("gqa_grid", d_model, n_heads, g, seed, causal, talk),
        lambda: heads_grid(
            d["weights_gqa"],
            d["tokens"],
            [kv_head_of(i, n_heads, g) for i in range(n_heads)],
            columns=2 if talk else 4,
            talk=talk,
        ),
        chart_key="hd_gqa_grid",
    )
    if not talk:
        st.caption("Each head's weights after the conversion; a title's colour is its K/V group.")


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


def decode_tab(d_model: int, n_heads: int, seed: int, talk: bool) -> None:
    st.latex(
        r"o_t = \operatorname{softmax}\!\left(\frac{q_t K_{\le t}^\top}{\sqrt{d_k}}\right)V_{\le t},\quad "
        r"K_{\le t} = [K_{\le t-1};\, k_t],\ V_{\le t} = [V_{\le t-1};\, v_t]"
    )
    g = int(st.session_state.get("hd_kv", n_heads))
    g = g if g in divisors(n_heads) else n_heads
    d = decode_data(d_model, n_heads, g, seed)
    urlstate.clamp_int("hd_dhead", 0, n_heads - 1)
    c = st.columns([4, 2])
    c[0].slider(
        "Decoding step t",
        0,
        N_TOKENS - 1,
        key="hd_step",
        help="Generate the sentence one token at a time; each step adds one row.",
    )
    c[1].number_input("Head", min_value=0, max_value=n_heads - 1, step=1, key="hd_dhead", disabled=n_heads == 1)
    step, head = int(st.session_state["hd_step"]), int(st.session_state["hd_dhead"])
    tok = d["tokens"][step]
    cached_kv = 2 * (step + 1) * g * d["d_k"] * 4
    prose(
        talk,
        f"At step {step} the new token “{tok}” is projected alone: one query per head, and one key and one "
        f"value per K/V head, which are appended to the cache. Its query then attends to the {step + 1} cached "
        "keys. No mask is needed, because the cache holds only the past: each row below is exactly the row of "
        "causal attention, computed once and never again.",
    )
    plot(
        ("decode", d_model, n_heads, g, seed, step, head, talk),
        lambda: decode_steps_figure(d["weights"], d["tokens"], step, head, talk=talk),
        chart_key="hd_decode_fig",
    )
    c = st.columns(3)
    c[0].metric(
        "Keys and values in the cache",
        f"{step + 1} tokens",
        f"{cached_kv} B in this one layer (float32)",
        delta_color="off",
        delta_arrow="off",
        border=True,
    )
    c[1].metric(
        "Token-by-token vs full causal",
        f"|Δ| ≤ {d['max_abs_diff']:.1e}",
        border=True,
        help="Every decoded row against causal multi-head attention over the whole sentence.",
    )
    c[2].metric(
        "K/V heads in the cache",
        f"{g} of {n_heads}",
        "set on the MHA → GQA → MQA tab",
        delta_color="off",
        delta_arrow="off",
        border=True,
    )

    st.subheader("Time per step, measured now")
    prose(
        talk,
        "Without a cache a decoder must recompute K and V of every token and the whole causal attention at every "
        "step, although only the last row is new: the scores alone grow as t². With the cache, a step projects "
        "one token and reads t cached rows: it grows as t. Both paths below call this library's attention on "
        "this server's CPU; one layer, 4 heads.",
    )
    snap("hd_tmax", MEASURE_MAX)
    snap("hd_tdm", MEASURE_DM)
    c = st.columns([3, 2, 1.4])
    c[0].select_slider(
        "Longest context measured", options=MEASURE_MAX, key="hd_tmax", format_func=lambda t: f"{t // 1024}k"
    )
    c[1].select_slider("d_model of the measured layer", options=MEASURE_DM, key="hd_tdm")
    c[2].button(
        "Measure again",
        key="hd_measure",
        icon=":material/refresh:",
        width="stretch",
        on_click=lambda: st.session_state.update(hd_run=st.session_state.get("hd_run", 0) + 1),
    )
    t_max, t_dm, run = (
        int(st.session_state["hd_tmax"]),
        int(st.session_state["hd_tdm"]),
        int(st.session_state.get("hd_run", 0)),
    )
    with st.spinner("Timing decoding steps at each context length (a few seconds)…"):
        r = timing_data(t_max, t_dm, run)
    plot(
        ("timing", t_max, t_dm, run, r["when"], talk),
        lambda: decode_timing_figure(r["cached"], r["recompute"], r["fits"], talk=talk),
        chart_key="hd_timing_fig",
    )
    fc, fr = r["fits"]["cached"], r["fits"]["recompute"]
    c = st.columns(3)
    c[0].metric(
        "Slope with a cache",
        f"{fc[0]:.2f}" if fc else "–",
        "1 would be linear in t",
        delta_color="off",
        delta_arrow="off",
        border=True,
    )
    c[1].metric(
        "Slope recomputing",
        f"{fr[0]:.2f}" if fr else "–",
        "2 would be quadratic in t",
        delta_color="off",
        delta_arrow="off",
        border=True,
    )
    xs, ys = r["cached"]
    xr, yr = r["recompute"]
    common = max(set(xs) & set(xr)) if set(xs) & set(xr) else None
    speed = yr[xr.index(common)] / ys[xs.index(common)] if common else None
    c[2].metric(
        f"Cache speed-up at t = {common}" if common else "Cache speed-up",
        f"{speed:.0f}×" if speed else "–",
        border=True,
    )
    skipped = ", ".join(str(t) for t in r["skipped"])
    st.caption(
        f"Measured at {r['when']} in {r['wall_s']:.1f} s on {r['threads']} thread(s); each point is the fastest of "
        "several calls (slower ones measure interruptions by other work). Slopes are log-log fits over the three "
        "largest measured contexts. At short contexts fixed per-call costs flatten the cached curve; once K and V "
        "outgrow the CPU's caches, each step reads them from main memory and the slope can rise above 1."
        + (f" Recomputing was not run at t = {skipped}: it would have taken too long." if skipped else "")
        + f" Both paths agree to |Δ| ≤ {r['max_abs_diff']:.1e}."
        + (
            f" The machine was so busy that t = {', '.join(map(str, r['unfinished']))} could not be measured in "
            "time; press Measure again later."
            if r["unfinished"]
            else ""
        )
    )


# ---------------------------------------------------------------------------------------------
# The page


def heads_page() -> None:
    urlstate.seed(PARAMS)
    talk = urlstate.talk_mode()
    if not talk:  # on a projector the navigation names the page; the figures get the room
        st.title("Heads, shared keys and the KV cache")
        st.markdown(
            "Real models run many heads at once, share keys and values between them, and generate text one "
            "token at a time from a cache. Each tab computes one of these live on the walkthrough's sentence."
        )
    urlstate.notices()
    urlstate.ensure_choice("hd_tab", TABS)
    tab_now = str(st.session_state["hd_tab"])
    d_model, n_heads, seed, causal = shared_controls(tab_now, talk)
    tabs = st.tabs(list(TABS), key="hd_tab", on_change="rerun")
    bodies = {
        "Split": lambda: split_tab(d_model, n_heads, seed, causal, talk),
        "Heads side by side": lambda: heads_tab(d_model, n_heads, seed, causal, talk),
        "MHA → GQA → MQA": lambda: gqa_tab(d_model, n_heads, seed, causal, talk),
        "KV-cache calculator": lambda: calculator_tab(talk),
        "Decode": lambda: decode_tab(d_model, n_heads, seed, talk),
    }
    for name, tab in zip(TABS, tabs, strict=True):
        if tab.open:
            with tab:
                try:
                    bodies[name]()
                except ValueError as exc:
                    st.error(f"These settings cannot be computed: {exc}")
    urlstate.publish(PARAMS)


heads_page()
