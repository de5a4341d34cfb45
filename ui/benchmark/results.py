"""The results of the last run: a figure per tab, the table and the CSV."""

from __future__ import annotations

import io
from typing import Any

import streamlit as st

from attention_core import bench
from figures import benchmark as figs
from figures.style import PLOTLY_CONFIG
from ui import viewport


def _table_rows(rows: list[bench.BenchResult]) -> list[dict[str, Any]]:
    mib = 2**20
    return [
        {
            "impl": r.impl,
            "n": r.n,
            "status": r.status,
            "median ms": r.median_ms,
            "IQR ms": r.iqr_ms,
            "samples": r.samples if r.status == "ok" else None,
            "GFLOP/s": r.gflops,
            "% of matmul peak": r.pct_of_peak,
            "peak MiB": None if r.peak_bytes is None else r.peak_bytes / mib,
            "predicted MiB": r.predicted_bytes / mib,
            "max error": r.max_error,
            "backend": r.backend,
            "note": r.note,
        }
        for r in rows
    ]


def show_results(talk: bool) -> None:
    saved = st.session_state.get("bm_result")
    partial = st.session_state.get("bm_partial")
    if partial:  # a run was interrupted (Cancel, or a control changed) before it finished
        st.warning(f"The last run was stopped after {len(partial)} configuration(s); showing what it measured.")
        rows, peak, spec = list(partial), None, None
    elif saved:
        rows, peak, spec = saved["rows"], saved["peak"], saved["spec"]
    else:
        st.info("Press **Run** to measure. Nothing runs until you do.", icon=":material/play_arrow:")
        return
    st.subheader("Results")
    if saved and not partial:
        what = (
            f"{len(rows)} configurations · d = {spec.d}, {spec.heads} heads, batch {spec.batch}, {spec.dtype}, "
            f"{'causal' if spec.causal else 'no mask'}, {rows[0].device}"
        )
        if saved["reused_all"]:
            what += " · all measured earlier on this server, shown at once"
        else:
            what += f" · {saved['wall']:.1f} s"
        if saved["stopped"] == "budget":
            what += " · the time budget ran out (raise it to measure more)"
        st.caption(what)
        if saved.get("disturbed"):
            st.warning(
                f"When this run started the CPU was busy with other work (load {saved['load']:.1f} per core), "
                "so these timings are disturbed, most of all for implementations made of many small steps "
                "(explained, tiled). Forget measurements and run again when the machine is quiet.",
                icon=":material/warning:",
            )

    dicts = bench.result_dicts(rows)
    all_fits = bench.scaling_fits(rows)
    fits = {
        f.impl: (f.time_slope, f.time_intercept, f.n_from, f.n_to)
        for f in all_fits.values()
        if f.time_slope is not None and f.time_intercept is not None
    }
    no_law = [f.describe() for f in all_fits.values() if f.time_slope is None]
    tabs = st.tabs(["Time", "Memory", "FLOP rate", "Speed-up", "Table"])

    def chart(fig: Any) -> None:  # talk mode: scrolled to, the chart and its tabs fit the window
        st.plotly_chart(viewport.fit_figure(fig, 150) if talk else fig, width="stretch", config=PLOTLY_CONFIG)

    with tabs[0]:
        chart(figs.time_figure(dicts, fits, talk=talk))
        few = sorted({f"{r.impl} n = {r.n}" for r in rows if r.status == "ok" and r.samples < bench.MIN_SAMPLES})
        if few:
            st.caption(
                f"Timed from fewer than {bench.MIN_SAMPLES} calls because the time budget ran short: "
                + ", ".join(few)
                + ". Raise the budget for steadier figures."
            )
        if not talk:
            st.caption(
                f"Median of {bench.MIN_SAMPLES} or more timed calls after a warm-up (the table says how many); "
                "bars span the inter-quartile range. "
                f"Slopes are fitted over each implementation's three largest n ≥ {bench.FIT_MIN_N} where the time "
                "grows at least as fast as n: 2 means the time grows as n². Where doubling n less than doubles "
                "the time, a fixed cost per call (kernel launches, Python) sets it: launch-bound, no exponent."
            )
        if no_law:
            st.caption(" · ".join(no_law))
    with tabs[1]:
        chart(figs.memory_figure(dicts, talk=talk))
        if not talk:
            source = next((r.memory_source for r in rows if r.memory_source), "")
            st.caption(
                f"Measured: {source or 'not measured'}, the growth over the memory in use before the call, "
                "output included. Dashes: the analytic prediction. On the CPU the figure is the whole server "
                "process's resident set, so it is only as exact as the C allocator lets it be: once one n×n "
                "matrix reaches 32 MiB (n ≥ 1024 at 8 heads, float32) it is usually within a few per cent "
                "of the live tensors, but memory freed earlier can be reused or kept, so a point can be off "
                "by one n×n matrix, more often at small n. The models are checked in a fresh process, where "
                "they hold to 3 % (20 runs each)."
            )
    with tabs[2]:
        chart(figs.rate_figure(dicts, peak, talk=talk))
    with tabs[3]:
        chart(figs.speedup_figure(bench.speedups(rows), talk=talk))
    with tabs[4]:
        _results_table(rows)

    buf = io.StringIO()
    bench.write_csv(rows, buf)
    st.download_button(
        "Download CSV",
        buf.getvalue(),
        file_name="attention-benchmark.csv",
        mime="text/csv",
        icon=":material/download:",
    )


def _results_table(rows: list[bench.BenchResult]) -> None:
    st.dataframe(
        _table_rows(rows),
        hide_index=True,
        width="stretch",
        placeholder="—",  # a skipped or n/a row has no timing: show a dash, never "None"
        column_config={
            "median ms": st.column_config.NumberColumn(format="%.3g"),
            "IQR ms": st.column_config.NumberColumn(format="%.2g"),
            "samples": st.column_config.NumberColumn(
                format="%d", help=f"timed calls; fewer than {bench.MIN_SAMPLES} only when the time budget ran out"
            ),
            "GFLOP/s": st.column_config.NumberColumn(format="%.1f"),
            "% of matmul peak": st.column_config.NumberColumn(format="%.0f"),
            "peak MiB": st.column_config.NumberColumn(format="%.1f"),
            "predicted MiB": st.column_config.NumberColumn(format="%.1f"),
            "max error": st.column_config.NumberColumn(format="%.1e", help="vs float64, at n = 128"),
        },
    )
