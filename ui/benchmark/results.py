"""The results of the last run: a figure per tab, the table and the CSV."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import asdict

import plotly.graph_objects as go
import streamlit as st

from attention_core import bench
from figures import benchmark as figs
from ui import draw
from ui.benchmark import running
from ui.frame import talk

MIB = 2**20
NUMBER = draw.NUMBER
MEMORY_NOTE = (
    "the growth over the memory in use before the call, output included. On the CPU the figure is the whole server "
    "process's resident set, so it is only as exact as the C allocator lets it be: once one n×n matrix reaches 32 MiB "
    "(n ≥ 1024 at 8 heads, float32) it is usually within a few per cent of the live tensors, but memory freed earlier "
    "can be reused or kept, so a point can be off by one n×n matrix, more often at small n. The predictions' models "
    "are checked in a fresh process, where they hold to 3 % (20 runs each for the forward, 10 per backward mode)."
)

GRAD_HELP = (
    "max |{x} − float64 autograd's {x}| at n = 128, for a random upstream gradient dO (modes with a backward). "
    "FlashAttention's rule allows twice textbook's error in the same dtype. In float32, fused backwards "
    "(sdpa's, tiled's) compute D = rowsum(dO ∘ O) and may reach twice torch SDPA's own error where rows "
    "are nearly one-hot."
)


def time_figure(is_talk: bool, rows: tuple[bench.BenchResult, ...], what: str = "") -> go.Figure:
    fits = {f.impl: (f.time_slope, f.time_intercept, f.n_from, f.n_to) for f in bench.scaling_fits(rows).values()
            if f.time_slope is not None and f.time_intercept is not None}  # fmt: skip
    return figs.time_figure([asdict(r) for r in rows], fits, talk=is_talk, what=what)


def memory_figure(is_talk: bool, rows: tuple[bench.BenchResult, ...]) -> go.Figure:
    return figs.memory_figure([asdict(r) for r in rows], talk=is_talk)


def rate_figure(is_talk: bool, rows: tuple[bench.BenchResult, ...], peak: float | None, mode: str) -> go.Figure:
    return figs.rate_figure([asdict(r) for r in rows], peak, talk=is_talk, flops=bench.flop_formula(mode))


def speedup_figure(is_talk: bool, rows: tuple[bench.BenchResult, ...]) -> go.Figure:
    return figs.speedup_figure(bench.speedups(rows), talk=is_talk)


def show_results() -> None:
    shown = running.last_run("bm", "configuration(s)")
    if shown is None:
        return
    rows, saved = tuple(shown[0]), shown[1]
    st.subheader("Results")
    if saved is not None:
        _summary(saved)
    mode = rows[0].mode if rows else "fwd"
    tabs = st.tabs(["Time", "Memory", "FLOP rate", "Speed-up", "Table"])
    with tabs[0]:  # talk mode: scrolled to, each chart and its tabs fit the window
        draw.chart(draw.figure(time_figure, talk(), rows, bench.MODE_NAMES[mode]), "bm_time", fit="benchmark.result")
        few = sorted({f"{r.impl} n = {r.n}" for r in rows if r.status == "ok" and r.samples < bench.MIN_SAMPLES})
        if few:
            st.caption(f"Timed from fewer than {bench.MIN_SAMPLES} calls because the time budget ran short: "
                       f"{', '.join(few)}. Raise the budget for steadier figures.")  # fmt: skip
        if not talk():
            st.caption(
                f"Median of {bench.MIN_SAMPLES} or more timed calls after a warm-up (the table says how many); "
                "bars span the inter-quartile range. Slopes are fitted over each implementation's three largest "
                f"n ≥ {bench.FIT_MIN_N} where the time grows at least as fast as n. Where doubling n less than "
                "doubles the time, a fixed cost per call (kernel launches, Python) sets it: launch-bound, no exponent."
            )
        no_law = [f.describe() for f in bench.scaling_fits(rows).values() if f.time_slope is None]
        if no_law:
            st.caption(" · ".join(no_law))
    with tabs[1]:
        draw.chart(draw.figure(memory_figure, talk(), rows), "bm_memory", fit="benchmark.result")
        if not talk():
            source = next((r.memory_source for r in rows if r.memory_source), "")
            st.caption(f"Measured: {source or 'not measured'}, {MEMORY_NOTE}")
    with tabs[2]:
        peak = saved.result.peak_gflops if saved is not None else None
        draw.chart(draw.figure(rate_figure, talk(), rows, peak, mode), "bm_rate", fit="benchmark.result")
    with tabs[3]:
        draw.chart(draw.figure(speedup_figure, talk(), rows), "bm_speedup", fit="benchmark.result")
    with tabs[4]:
        _results_table(rows)
    buf = io.StringIO()
    bench.write_csv(rows, buf)
    st.download_button("Download CSV", buf.getvalue(), file_name="attention-benchmark.csv", mime="text/csv",
                       icon=":material/download:")  # fmt: skip


def _summary(saved: running.Measured) -> None:
    """What was measured, in a caption; a warning when a busy CPU disturbed the timings."""
    spec, result = saved.spec, saved.result
    what = [
        f"{len(result.rows)} configurations, {bench.MODE_NAMES[spec.mode]}",
        f"d = {spec.d}, {spec.heads} heads, batch {spec.batch}, {spec.dtype}, "
        f"{'causal' if spec.causal else 'no mask'}, {result.rows[0].device}",
        "all measured earlier on this server, shown at once" if saved.reused_all else f"{result.wall_s:.1f} s",
    ]
    if result.stopped == "budget":
        what.append("the time budget ran out (raise it to measure more)")
    st.caption(" · ".join(what))
    if result.disturbed:
        st.warning(
            f"When this run started the CPU was busy with other work (load {result.load_per_core:.1f} per core), "
            "so these timings are disturbed, most of all for implementations made of many small steps "
            "(trace, tiled). Forget measurements and run again when the machine is quiet.",
            icon=":material/warning:",
        )


def _results_table(rows: Sequence[bench.BenchResult]) -> None:
    st.dataframe(
        [{"impl": r.impl, "n": r.n, "mode": r.mode, "status": r.status, "median ms": r.median_ms, "IQR ms": r.iqr_ms,
          "samples": r.samples if r.status == "ok" else None, "GFLOP/s": r.gflops, "% of matmul peak": r.pct_of_peak,
          "peak MiB": None if r.peak_bytes is None else r.peak_bytes / MIB, "predicted MiB": r.predicted_bytes / MIB,
          "max error": r.max_error, "err dQ": r.err_dq, "err dK": r.err_dk, "err dV": r.err_dv,
          "backend": r.backend, "note": r.note} for r in rows],
        hide_index=True, width="stretch", placeholder="—",  # a skipped or n/a row has no timing: a dash, never "None"
        column_config={
            "median ms": NUMBER(format="%.3g"), "IQR ms": NUMBER(format="%.2g"), "GFLOP/s": NUMBER(format="%.1f"),
            "samples": NUMBER(format="%d", help=f"timed calls; fewer than {bench.MIN_SAMPLES} only when the time "
                              "budget ran out"),
            "% of matmul peak": NUMBER(format="%.0f"), "peak MiB": NUMBER(format="%.1f"),
            "predicted MiB": NUMBER(format="%.1f"), "max error": NUMBER(format="%.1e", help="vs float64, at n = 128"),
            **{col: NUMBER(format="%.1e", help=GRAD_HELP.format(x=col[-2:])) for col in ("err dQ", "err dK", "err dV")},
        },
    )  # fmt: skip
