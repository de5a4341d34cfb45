"""Running a sweep, for the benchmark and Beyond n²'s cost tab: Run and Cancel, the server's lock (:mod:`ui.runlock`),
a line per configuration, the last run kept in the session, and the rows this server measured, shared by every
session so that a sweep asked for again returns at once."""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from attention_core import bench
from ui.runlock import flag_button, turn


@dataclass
class ResultStore:
    """Finished rows by configuration, and the matmul peak per (device, dtype)."""

    rows: dict[bench.BenchConfig, bench.BenchResult] = field(default_factory=dict)
    peaks: dict[tuple[str, str], float] = field(default_factory=dict)  # (device, dtype) -> matmul GFLOP/s

    def remember(self, row: bench.BenchResult) -> None:
        """Keep a finished row for reuse, unless it only says the run was cut short."""
        if row.status in ("ok", "n/a", "oom"):  # a skip depends on the cap and the budget, a cancel on the viewer
            self.rows[bench.BenchConfig(row.impl, row.n, **row.shape())] = row


@st.cache_resource(show_spinner=False)
def results() -> ResultStore:
    return ResultStore()


@dataclass(frozen=True)
class Measured:
    """The last finished run a session keeps (``<page>_result``), and the route that stood in for one this machine
    lacks."""

    spec: bench.SweepSpec
    result: bench.SweepResult
    reused_all: bool = False
    fallback: str | None = None


def run_buttons(run: DeltaGenerator, cancel: DeltaGenerator, page: str, *, disabled: bool, what: str) -> bool:
    """Run and Cancel; whether Run was pressed. A Cancel is said in a toast."""
    pressed = flag_button(run, "Run", f"{page}_run", type="primary", icon=":material/play_arrow:", disabled=disabled)
    if flag_button(cancel, "Cancel", f"{page}_cancel", icon=":material/stop:",
                   help=f"Stops a running or queued {what}."):
        st.toast("Cancelled.", icon=":material/stop:")
    return pressed


def _line(row: bench.BenchResult, reused: bool) -> str:
    head = f"`{row.impl}` n = {row.n}"
    if row.status == "ok":
        tail = " (measured earlier)" if reused else ""
        return f":material/check: {head}: {row.median_ms:.3g} ms, {bench.format_bytes(row.peak_bytes)}{tail}"
    return f":material/block: {head}: **{row.status}**, {row.note}"


def run(spec: bench.SweepSpec, budget: int, cap: int, *, page: str, store: ResultStore | None = None,
        fallback: str | None = None, **sweep: object) -> None:  # fmt: skip
    """The sweep under the server lock, a line per configuration and a progress bar; each row kept in the session
    as it lands (``<page>_partial``, in case a rerun cuts the loop), the run at its end (``<page>_result``)."""
    st.session_state.pop(f"{page}_result", None)
    configs = spec.configs()
    peak_key = (configs[0].device, spec.dtype)
    rows: list[bench.BenchResult] = []
    st.session_state[f"{page}_partial"] = rows
    store = ResultStore() if store is None else store  # without one, an empty store of this run's own: no reuse
    if all(c in store.rows for c in configs):  # nothing to measure: no lock, no timing
        earlier = bench.SweepResult([store.rows[c] for c in configs], 0.0, store.peaks.get(peak_key))
        return _keep(page, Measured(spec, earlier, reused_all=True))
    with turn(f"{len(configs)} configurations on {configs[0].device}") as ours:
        if not ours:
            return
        with st.status(f"Measuring {len(configs)} configurations…", expanded=True) as status:
            bar = st.progress(0.0, text="warming up")

            def progress(p: bench.SweepProgress) -> None:
                if p.result is None:  # said before each configuration: which one is next
                    bar.progress(p.done / p.total, text=f"{p.config.impl}, n = {p.config.n} ({p.done + 1}/{p.total})")
                    return
                reused = store.rows.get(p.config) is p.result
                store.remember(p.result)
                rows.append(p.result)
                st.markdown(_line(p.result, reused))
                bar.progress(p.done / p.total, text=f"{p.done}/{p.total} done")

            result = bench.run_sweep(spec, cap_bytes=cap, budget_s=budget, progress=progress, cached=store.rows.get,
                                     **sweep)  # type: ignore[arg-type]
            if result.peak_gflops:
                store.peaks[peak_key] = result.peak_gflops
            ended = {"budget": "stopped: time budget used up", "cancelled": "cancelled"}.get(result.stopped or "")
            status.update(label=f"Done in {result.wall_s:.1f} s" + (f" ({ended})" if ended else ""),
                          state="complete", expanded=False)  # fmt: skip
        _keep(page, Measured(spec, result, fallback=fallback))


def _keep(page: str, measured: Measured) -> None:
    st.session_state[f"{page}_result"] = measured
    st.session_state.pop(f"{page}_partial", None)


def last_run(page: str, what: str) -> tuple[list[bench.BenchResult], Measured | None] | None:
    """The rows to show: a stopped run's (with a warning), or the last finished run's; None (and a line saying
    Run) when there are none."""
    partial, saved = st.session_state.get(f"{page}_partial"), st.session_state.get(f"{page}_result")
    if partial:  # a run was interrupted (Cancel, or a control changed) before it finished
        st.warning(f"The last run was stopped after {len(partial)} {what}; showing what it measured.")
        return list(partial), None
    if saved is None:
        st.info("Press **Run** to measure. Nothing runs until you do.", icon=":material/play_arrow:")
        return None
    return saved.result.rows, saved
