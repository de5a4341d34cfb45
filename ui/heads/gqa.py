"""The "Heads side by side" tab (every head's weights on the sentence, and where “it” looks) and the "MHA → GQA →
MQA" tab (query heads sharing fewer K/V heads, and what that saves), which draws the same heads after the sharing."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from attention_core.heads import attention_kind, attention_parameters, divisors, kv_head_of
from figures.heads import head_heatmap, sharing_figure
from ui import draw
from ui.frame import talk
from ui.heads.data import example_data, fmt_int
from ui.heads.examples import HeadSettings

KEY_NAMES = 85  # px the slanted key names take under a heatmap in talk mode


def per_row(n_heads: int, talk: bool) -> int:
    """Heads in a row: four on a projector, as the talk layout is made for; two on a laptop, where four columns
    of 190 px squeezed a heatmap to 95 px. Below 640 px Streamlit stacks the columns, one head a row."""
    return min(4 if talk else 2, n_heads)


def head_figure(
    d_model: int, n_heads: int, n_kv_heads: int, seed: int, causal: bool, head: int, height: int, keys: bool,
    talk: bool,
) -> go.Figure:
    """One head's weights after the GQA conversion to g K/V heads (with g = h, plain MHA): only the last of its row
    carries the colour bar, and in talk mode (a row that never stacks) only the first names the query tokens."""
    d, cols = example_data(d_model, n_heads, n_kv_heads, seed, causal), per_row(n_heads, talk)
    return head_heatmap(d.weights_gqa[head], d.tokens, head, kv_head_of(head, n_heads, n_kv_heads),
                        grouped=n_kv_heads < n_heads, colorbar=head % cols == cols - 1, numbers=n_heads <= 2,
                        row_labels=not talk or head % cols == 0, col_labels=keys, height=height, talk=talk)  # fmt: skip


def head_grid(d_model: int, n_heads: int, n_kv_heads: int, seed: int, causal: bool, key: str,
              fit: str | None = None) -> None:  # fmt: skip
    """Every head's weights, one figure per head in columns (:func:`per_row`): side by side on a laptop or a
    projector, stacked on a phone. In talk mode one row fills the window's rest (``fit``); two rows share it."""
    cols = per_row(n_heads, talk())
    rows = -(-n_heads // cols)
    heights = [360] * rows
    if talk() and fit:  # the keys are named under the last row only (a row never stacks on a projector)
        plot = (draw.room(fit, 900) - 16 - KEY_NAMES) // rows  # 16: the gap between the rows
        heights = [draw.room(fit, 440)] if rows == 1 else [plot] * (rows - 1) + [plot + KEY_NAMES]
    # The last column holds the colour bar and, in talk mode, only the first the token names: those are wider, so
    # the heatmaps come out the same size.
    widths = ([1.3, *[1] * (cols - 2), 1.2] if talk() else [1, 1.15]) if cols > 1 else cols
    for r, height in enumerate(heights):
        keys = not talk() or r == rows - 1
        for c, col in enumerate(st.columns(widths)):
            head = r * cols + c
            with col:
                fig = draw.figure(head_figure, d_model, n_heads, n_kv_heads, seed, causal, head, height, keys, talk())
                draw.chart(fig, f"{key}{head}", fit=fit if rows == 1 else None)


def heads_tab(sh: HeadSettings) -> None:
    d_model, n_heads, seed, causal = sh.d_model, sh.n_heads, sh.seed, sh.causal
    d = example_data(d_model, n_heads, n_heads, seed, causal)
    st.latex(
        r"\operatorname{head}_i = \operatorname{softmax}\!\left(\frac{Q_i K_i^\top}{\sqrt{d_k}}\right)V_i,\qquad "
        r"O = [\operatorname{head}_1;\dots;\operatorname{head}_h]\,W_O"
    )
    if talk():
        st.markdown("**Here the heads differ only by chance:** the projections are random, not trained.")
    else:
        st.markdown(
            f"**What differs between the heads here is chance.** W_Q, W_K and W_V are random (seed {seed}), "
            "not trained, so each head's slice of them is a different random projection and its weights differ "
            "at random. In a trained model the heads specialise (one follows the previous token, one links a "
            "pronoun to its noun); nothing here has learned to."
        )
    head_grid(d_model, n_heads, n_heads, seed, causal, "hd_grid_fig", fit="heads.Heads side by side")
    tokens, it = d.tokens, d.weights_mha[:, d.tokens.index("it")]  # (h, L): each head's row of “it”
    st.markdown(
        "**Where “it” looks, head by head:** "
        + " · ".join(f"head {i}: “{tokens[row.argmax()]}” {row.max():.0%}" for i, row in enumerate(it))
    )


def kv_heads_control(n_heads: int, box: DeltaGenerator | None = None) -> int:
    """The K/V heads g (this tab's and the decode tab's): only divisors of h.

    Streamlit sets a value that is not one back to the default, and the frame's notice names it; a
    g from the link that is at most h is worth a sentence on why it cannot be.
    """
    options, default = divisors(n_heads), min(2, n_heads)
    asked = st.query_params.get("hd_kv", "")
    if asked.isdigit() and 0 < int(asked) <= n_heads and int(asked) not in options:
        st.warning(
            f"{asked} K/V heads cannot serve {n_heads} query heads evenly: the number of K/V heads must divide "
            f"the number of query heads ({', '.join(map(str, options))}). Showing {default}.",
            icon=":material/info:",
        )
    return (box or st).select_slider(
        "K/V heads g", options, default, key="hd_kv", bind="query-params",
        help="How many K/V heads the query heads share: h is multi-head attention (MHA), 1 multi-query (MQA), "
        "a divisor in between grouped-query attention (GQA).",
    )  # fmt: skip


def gqa_tab(sh: HeadSettings) -> None:
    d_model, n_heads, seed, causal = sh.d_model, sh.n_heads, sh.seed, sh.causal
    g = kv_heads_control(n_heads)
    d = example_data(d_model, n_heads, g, seed, causal)
    st.latex(
        rf"\text{{query head }} i \text{{ reads K/V head }} \left\lfloor i \,/\, \tfrac{{h}}{{g}} \right\rfloor"
        rf"\qquad h = {n_heads},\ g = {g}\ \text{{({attention_kind(n_heads, g)})}}"
    )
    draw.chart(draw.figure(sharing_figure, n_heads, g, talk()), "hd_share_fig", fit="heads.MHA → GQA → MQA")
    kv, kv_mha = 2 * g * d.d_k * 4, 2 * n_heads * d.d_k * 4  # float32 K and V of one token, one layer
    params, params_mha = attention_parameters(d_model, n_heads, g), attention_parameters(d_model, n_heads)
    draw.metrics(
        ("Attention weights", fmt_int(params), f"{params / params_mha:.0%} of MHA's {fmt_int(params_mha)}",
         "W_Q, W_K, W_V and W_O of one attention block, no biases."),
        ("KV cache per token", f"{kv} B", f"{kv / kv_mha:.0%} of MHA's {kv_mha} B",
         "K and V of one token in one layer, float32."),
        ("Output |Δ| vs MHA", f"{d.max_abs_diff:.3g}", f"relative ‖Δ‖/‖O‖ = {d.rel_diff:.2f}",
         "The same W_Q and W_O; K/V projections mean-pooled within each group."),
        ("|Δ| vs torch SDPA", f"{d.delta_torch:.0e}", "enable_gqa=True",
         "This page's grouped-query output against torch.nn.functional.scaled_dot_product_attention."),
        border=True,
    )  # fmt: skip
    draw.prose(
        "**How the grouped weights are made.** Start from the multi-head model on the other tabs. Keep W_Q and "
        "W_O. For each group of h/g query heads, average the group's K projections into one K head, and the V "
        "projections into one V head. That is the conversion of the GQA paper (Ainslie et al., 2023); since a "
        "projection is linear, averaging the weights averages the heads' keys. With g = h nothing changes and "
        "the difference is 0."
    )
    if g < n_heads:
        draw.prose(
            f"**Why the difference is large here.** These heads are random, so the average of {n_heads // g} "
            'unrelated heads is close to none of them. The paper therefore continues training ("uptraining") for '
            "about 5% of the original pre-training to recover the quality. What GQA buys is in the two numbers on "
            f"the left: W_K and W_V shrink by {1 - g / n_heads:.0%}, and so does the KV cache, which at long "
            "contexts is what fills a GPU (see the calculator tab)."
        )
    head_grid(d_model, n_heads, g, seed, causal, "hd_gqa_grid")
    if not talk():
        st.caption("Each head's weights after the conversion; a title's colour is its K/V group.")
