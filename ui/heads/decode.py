"""The "Decode" tab: generating the sentence token by token from a KV cache, and timing a step live."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from attention_core.heads import attention_kind
from figures.heads import decode_steps_figure, decode_timing_figure, kilo
from ui import draw
from ui.frame import talk
from ui.heads.data import N_TOKENS, example_data, timing_data
from ui.heads.examples import HeadSettings
from ui.heads.gqa import kv_heads_control

MEASURE_MAX = {kilo(t): t for t in (2048, 4096, 8192, 16384)}  # by what the slider shows


def steps_figure(d_model: int, n_heads: int, g: int, seed: int, step: int, head: int, talk: bool) -> go.Figure:
    d = example_data(d_model, n_heads, g, seed, False)  # the decoding is causal whatever the mask control says
    room = draw.room("heads.Decode", 560) if talk else 560  # talk: its numbers sized for the projector's room
    return decode_steps_figure(d.decoded, d.tokens, step, head, talk=talk, max_height=room)


def timing_figure(t_max: int, d_model: int, run: int, when: str, talk: bool) -> go.Figure:
    # ``when`` keys the figure to this measurement (the cache lasts an hour)
    return decode_timing_figure(timing_data(t_max, d_model, run).steps, talk=talk)


def decode_tab(sh: HeadSettings) -> None:
    d_model, n_heads, seed = sh.d_model, sh.n_heads, sh.seed
    st.latex(
        r"o_t = \operatorname{softmax}\!\left(\frac{q_t K_{\le t}^\top}{\sqrt{d_k}}\right)V_{\le t},\quad "
        r"K_{\le t} = [K_{\le t-1};\, k_t],\ V_{\le t} = [V_{\le t-1};\, v_t]"
    )
    c = st.columns([4, 2, 2])
    step = c[0].slider("Decoding step t", 0, N_TOKENS - 1, 7, key="hd_step", bind="query-params",
                       help="Generate the sentence one token at a time; each step adds one row.")  # fmt: skip
    head = c[1].number_input("Head", 0, n_heads - 1, 0, key="hd_dhead", bind="query-params", disabled=n_heads == 1)
    g = kv_heads_control(n_heads, c[2])
    d = example_data(d_model, n_heads, g, seed, False)
    draw.prose(
        f"At step {step} the new token “{d.tokens[step]}” is projected alone: one query per head, and one key "
        f"and one value per K/V head, which are appended to the cache. Its query then attends to the {step + 1} "
        "cached keys. No mask is needed, because the cache holds only the past: each row below is exactly the row "
        "of causal attention, computed once and never again."
    )
    fig = draw.figure(steps_figure, d_model, n_heads, g, seed, step, head, talk())
    draw.chart(fig, "hd_decode_fig", fit="heads.Decode")
    draw.metrics(
        ("Keys and values in the cache", f"{step + 1} tokens",
         f"{2 * (step + 1) * g * d.d_k * 4} B in this one layer (float32)"),
        ("Token-by-token vs full causal", f"|Δ| ≤ {d.decode_diff:.1e}", None,
         "Every decoded row against causal multi-head attention over the whole sentence."),
        ("K/V heads in the cache", f"{g} of {n_heads}", attention_kind(n_heads, g)),
        border=True,
    )  # fmt: skip

    st.subheader("Time per step, measured now")
    draw.prose(
        "Without a cache a decoder must recompute K and V of every token and the whole causal attention at every "
        "step, although only the last row is new: the scores alone grow as t². With the cache, a step projects "
        "one token and reads t cached rows: it grows as t. Both paths below call this library's attention on "
        "this server's CPU; one layer, 4 heads."
    )
    c = st.columns([3, 2, 1.4], vertical_alignment="bottom")
    t_max = MEASURE_MAX[c[0].select_slider("Longest context measured", tuple(MEASURE_MAX), "8k", key="hd_tmax",
                                           bind="query-params")]  # fmt: skip
    t_dm = c[1].select_slider("d_model of the measured layer", (64, 128, 256), 128, key="hd_tdm", bind="query-params")
    run = st.session_state.get("hd_run", 0)
    c[2].button("Measure again", key="hd_measure", icon=":material/refresh:", width="stretch",
                on_click=lambda: st.session_state.update(hd_run=run + 1))  # fmt: skip
    with st.spinner("Timing decoding steps at each context length (a few seconds)…"):
        r = timing_data(t_max, t_dm, run)
    draw.chart(draw.figure(timing_figure, t_max, t_dm, run, r.when, talk()), "hd_timing_fig")
    s = r.steps
    fc, fr = s.fit("cached"), s.fit("recompute")
    both = [(c, r / u) for c, u, r in zip(s.contexts, s.cached_s, s.recompute_s, strict=True) if u and r]
    common, speed = both[-1] if both else (None, None)  # the largest context measured both ways
    draw.metrics(
        ("Slope with a cache", f"{fc[0]:.2f}" if fc else "–", "1 would be linear in t"),
        ("Slope recomputing", f"{fr[0]:.2f}" if fr else "–", "2 would be quadratic in t"),
        (f"Cache speed-up at t = {common}" if common else "Cache speed-up", f"{speed:.0f}×" if speed else "–", None),
        border=True,
    )
    skipped = ", ".join(str(c) for c, u, t in zip(s.contexts, s.cached_s, s.recompute_s, strict=True) if u and not t)
    unfinished = ", ".join(str(c) for c, u in zip(s.contexts, s.cached_s, strict=True) if u is None)  # a busy machine
    st.caption(
        f"Measured at {r.when} in {s.wall_s:.1f} s on {s.threads} thread(s); each point is the fastest of "
        "several calls (slower ones measure interruptions by other work). Slopes are log-log fits over the three "
        "largest measured contexts. At short contexts fixed per-call costs flatten the cached curve; once K and V "
        "outgrow the CPU's caches, each step reads them from main memory and the slope can rise above 1."
        + (f" Recomputing was not run at t = {skipped}: it would have taken too long." if skipped else "")
        + f" Both paths agree to |Δ| ≤ {s.max_abs_diff:.1e}."
        + (f" The machine was so busy that t = {unfinished} could not be measured in time; press Measure again "
           "later." if unfinished else "")
    )  # fmt: skip
