"""The "MHA → GQA → MQA" tab: query heads sharing fewer K/V heads, and what that saves."""

from __future__ import annotations

import streamlit as st

from attention_core import kv_head_of
from figures.heads import heads_grid, sharing_figure
from ui.heads.common import divisors, fmt_int, plot, prose
from ui.heads.data import example_data


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
