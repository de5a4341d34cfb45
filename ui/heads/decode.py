"""The "Decode" tab: generating the sentence token by token from a KV cache, and timing a step live."""

from __future__ import annotations

import streamlit as st

from figures.heads import decode_steps_figure, decode_timing_figure
from ui import urlstate
from ui.heads.common import N_TOKENS, divisors, plot, prose, snap
from ui.heads.data import decode_data, timing_data

MEASURE_MAX = (2048, 4096, 8192, 16384)
MEASURE_DM = (64, 128, 256)


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
