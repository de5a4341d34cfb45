"""Running a sweep: queue for the server's lock, measure with a line per configuration, keep the result."""

from __future__ import annotations

import streamlit as st

from attention_core import bench
from ui.benchmark.server import results
from ui.runlock import Holding, server_lock, wait_turn


def _line(row: bench.BenchResult, reused: bool) -> str:
    head = f"`{row.impl}` n = {row.n}"
    if row.status == "ok":
        tail = " (measured earlier)" if reused else ""
        return f":material/check: {head}: {row.median_ms:.3g} ms, {bench.format_bytes(row.peak_bytes)}{tail}"
    return f":material/block: {head}: **{row.status}**, {row.note}"


def run(spec: bench.SweepSpec, budget: int, cap: int) -> None:
    """Run the sweep under the server lock, with a line per configuration and a progress bar."""
    server, store = server_lock(), results()
    configs = spec.configs()
    st.session_state["bm_partial"] = []
    if all(store.lookup(c) is not None for c in configs):  # nothing to measure: no lock, no timing
        rows = [store.lookup(c) for c in configs]
        peak = store.peaks.get((configs[0].device, spec.dtype))
        _keep(spec, bench.SweepResult(rows, 0.0, peak), reused_all=True)
        return
    holding = Holding()
    try:
        if not wait_turn(server, holding):
            return
        server.describe(f"{len(configs)} configurations on {configs[0].device}")
        with st.status(f"Measuring {len(configs)} configurations…", expanded=True) as status:
            bar = st.progress(0.0, text="warming up")

            def progress(p: bench.SweepProgress) -> None:
                if p.result is None:
                    bar.progress(p.done / p.total, text=f"{p.config.impl}, n = {p.config.n} ({p.done + 1}/{p.total})")
                    return
                reused = store.lookup(p.config) is p.result
                store.remember(p.result)
                st.session_state["bm_partial"].append(p.result)  # kept if a rerun interrupts the loop
                st.markdown(_line(p.result, reused))
                bar.progress(p.done / p.total, text=f"{p.done}/{p.total} done")

            result = bench.run_sweep(
                spec,
                cap_bytes=cap,
                budget_s=budget,
                min_run_time=bench.DEFAULT_MIN_RUN_TIME,
                progress=progress,
                cached=store.lookup,
            )
            if result.peak_gflops:
                store.peaks[(configs[0].device, spec.dtype)] = result.peak_gflops
            ended = {"budget": "stopped: time budget used up", "cancelled": "cancelled"}.get(result.stopped or "")
            label = f"Done in {result.wall_s:.1f} s" + (f" ({ended})" if ended else "")
            status.update(label=label, state="complete", expanded=False)
        _keep(spec, result)
    finally:
        if holding.ours:  # also when Cancel (a rerun) interrupted the loop at a Streamlit call
            server.release()


def _keep(spec: bench.SweepSpec, result: bench.SweepResult, reused_all: bool = False) -> None:
    st.session_state["bm_result"] = {
        "spec": spec,
        "rows": result.rows,
        "peak": result.peak_gflops,
        "wall": result.wall_s,
        "stopped": result.stopped,
        "reused_all": reused_all,
        "disturbed": result.disturbed,
        "load": result.load_per_core,
    }
    st.session_state.pop("bm_partial", None)
