"""Benchmark: what attention costs on this CPU or GPU, measured, with the theory beside it."""

from __future__ import annotations

import io
import math
import time
from dataclasses import astuple
from typing import Any

import streamlit as st

from attention_core import available_devices, bench, default_device, triton_available, triton_kernel_sources
from figures import benchmark as figs
from figures.style import PLOTLY_CONFIG
from ui import urlstate, viewport
from ui.params import BoolParam, ChoiceParam, IntParam, MultiChoiceParam

ON_CLOUD = bench.running_on_streamlit_cloud()
N_MIN = 128
N_MAX = 8192 if ON_CLOUD else 32768
N_OPTIONS = tuple(2**p for p in range(int(math.log2(N_MIN)), int(math.log2(N_MAX)) + 1))
D_OPTIONS = (16, 32, 64, 128)
DEVICES = tuple(available_devices())
DEFAULT = bench.DEFAULT_SWEEP


IMPLS = MultiChoiceParam("bm_impl", DEFAULT.impls, tuple(bench.IMPLEMENTATIONS), label="implementations")
N_FROM = IntParam("bm_nmin", DEFAULT.ns[0], N_MIN, N_MAX, label="smallest n")
N_TO = IntParam("bm_nmax", min(DEFAULT.ns[-1], N_MAX), N_MIN, N_MAX, label="largest n")
D = IntParam("bm_d", DEFAULT.d, D_OPTIONS[0], D_OPTIONS[-1], label="d")
HEADS = IntParam("bm_heads", DEFAULT.heads, 1, 16, label="heads")
BATCH = IntParam("bm_batch", DEFAULT.batch, 1, 8, label="batch")
DTYPE = ChoiceParam("bm_dtype", DEFAULT.dtype, ("float32", "bfloat16", "float16"), label="dtype")
CAUSAL = BoolParam("bm_causal", DEFAULT.causal, label="causal")
DEVICE = ChoiceParam("bm_device", str(default_device()), DEVICES, label="device")
BUDGET = IntParam("bm_budget", 20, 5, 60 if ON_CLOUD else 600, label="time budget")
PARAMS = [IMPLS, N_FROM, N_TO, D, HEADS, BATCH, DTYPE, CAUSAL, DEVICE, BUDGET]


# ---- one benchmark at a time per server -------------------------------------------------


@st.cache_resource(show_spinner=False)
def _server() -> bench.BenchLock:
    """Shared by every session of this server: the run lock and the rows measured so far."""
    return bench.BenchLock()


# ---- cached wrappers of the core ----------------------------------------------------------


def _cap_and_free(device: str) -> tuple[int, int | None]:
    """Read every run (two small /proc reads): free memory changes, and so may $ATTENTION_BENCH_CAP_GB."""
    return bench.default_cap_bytes(device), bench.free_memory_bytes(device)


@st.cache_data(show_spinner=False)
def _memory_table(dtype: str, batch: int, heads: int, free: int | None, cap: int) -> list[dict[str, Any]]:
    return bench.memory_table(dtype, batch, heads, free_bytes=free, cap_bytes=cap)


@st.cache_data(show_spinner=False)
def _flop_table(n: int, d: int, batch: int, heads: int, causal: bool) -> list[dict[str, Any]]:
    return bench.flop_table(n, d, batch, heads, causal)


@st.cache_data(show_spinner=False, ttl=30)  # the load average in it moves
def _environment(device: str) -> dict[str, str]:
    return bench.environment(device)


@st.cache_data(show_spinner=False, ttl=60)
def _plan(
    impls: tuple[str, ...],
    ns: tuple[int, ...],
    d: int,
    heads: int,
    batch: int,
    dtype: str,
    causal: bool,
    device: str,
    kv_heads: int | None,
    cap: int,
) -> list[tuple[str, int, int, str | None]]:
    spec = bench.SweepSpec(impls, ns, d, heads, batch, dtype, causal, device, kv_heads)
    return [(p.config.impl, p.config.n, p.needed_bytes, p.refusal) for p in bench.plan(spec, cap)]


# ---- controls -----------------------------------------------------------------------------


def sweep_controls() -> bench.SweepSpec:
    """Read the widgets; return the sweep they describe."""
    described = "\n".join(f"- **{i.name}**: {i.description}" for i in bench.IMPLEMENTATIONS.values())
    top = st.columns([4, 2, 2])
    top[0].multiselect("Implementations", IMPLS.options, key=IMPLS.key, help=described)
    for param in (N_FROM, N_TO):
        _snap_to_power_of_two(param.key)
    top[1].select_slider("Smallest n", options=N_OPTIONS, key=N_FROM.key)
    top[2].select_slider("Largest n", options=N_OPTIONS, key=N_TO.key, help="n runs over the powers of two between.")
    row = st.columns([2, 2, 2, 2, 3, 2])
    urlstate.ensure_choice(D.key, D_OPTIONS, DEFAULT.d)
    row[0].select_slider("Head size d", options=D_OPTIONS, key=D.key)
    row[1].slider("Heads", HEADS.low, HEADS.high, key=HEADS.key)
    row[2].slider("Batch", BATCH.low, BATCH.high, key=BATCH.key)
    device = st.session_state[DEVICE.key]
    dtypes = ("float32", "bfloat16", "float16") if device.startswith("cuda") else ("float32", "bfloat16")
    urlstate.ensure_choice(DTYPE.key, dtypes, "float32")
    row[3].selectbox("dtype", dtypes, key=DTYPE.key, help="float16 is offered on CUDA devices.")
    row[4].selectbox("Device", DEVICES, key=DEVICE.key, format_func=lambda d: "CPU" if d == "cpu" else f"CUDA ({d})")
    with row[5]:
        st.write("")
        st.toggle("Causal", key=CAUSAL.key, help="Each query sees only earlier keys: half the work.")
    lo, hi = sorted((st.session_state[N_FROM.key], st.session_state[N_TO.key]))
    spec = bench.SweepSpec(
        impls=tuple(st.session_state[IMPLS.key]),
        ns=tuple(n for n in N_OPTIONS if lo <= n <= hi),
        d=int(st.session_state[D.key]),
        heads=int(st.session_state[HEADS.key]),
        batch=int(st.session_state[BATCH.key]),
        dtype=st.session_state[DTYPE.key],
        causal=bool(st.session_state[CAUSAL.key]),
        device=st.session_state[DEVICE.key],
    )
    return spec


def _snap_to_power_of_two(key: str) -> None:
    """A length from the URL that is not a power of two becomes the nearest one offered."""
    value = int(st.session_state.get(key, N_MIN))
    if value not in N_OPTIONS:
        st.session_state[key] = min(N_OPTIONS, key=lambda o: abs(math.log2(max(value, 1)) - math.log2(o)))


# ---- running ------------------------------------------------------------------------------


def _line(row: bench.BenchResult, reused: bool) -> str:
    head = f"`{row.impl}` n = {row.n}"
    if row.status == "ok":
        tail = " (measured earlier)" if reused else ""
        return f":material/check: {head}: {row.median_ms:.3g} ms, {bench.format_bytes(row.peak_bytes)}{tail}"
    return f":material/block: {head}: **{row.status}**, {row.note}"


class _Holding:
    """Set the moment the lock is ours, before any Streamlit call that a rerun could interrupt."""

    ours = False


def _wait_for_lock(server: bench.BenchLock, holding: _Holding) -> bool:
    """Queue behind another session's run; True once the lock is ours. Cancel (a rerun) ends the wait."""
    if server.try_acquire():
        holding.ours = True
        return True
    start = time.perf_counter()
    with st.status("Busy, queued: another viewer's benchmark is running…", state="running") as status:
        while time.perf_counter() - start < server.wait_s:
            if server.try_acquire(timeout=0.5):
                holding.ours = True
                status.update(label="Our turn: starting.", state="complete", expanded=False)
                return True
            status.update(label=f"Busy, queued behind {server.running} (running for {server.busy_for():.0f} s)…")
        status.update(label=f"Still busy after {server.wait_s:.0f} s; try again later.", state="error")
    return False


def run(spec: bench.SweepSpec, budget: int, cap: int) -> None:
    """Run the sweep under the server lock, with a line per configuration and a progress bar."""
    server = _server()
    configs = spec.configs()
    st.session_state["bm_partial"] = []
    if all(server.lookup(c) is not None for c in configs):  # nothing to measure: no lock, no timing
        rows = [server.lookup(c) for c in configs]
        peak = server.peaks.get((configs[0].device, spec.dtype))
        _keep(spec, bench.SweepResult(rows, 0.0, peak), reused_all=True)
        return
    holding = _Holding()
    try:
        if not _wait_for_lock(server, holding):
            return
        server.describe(f"{len(configs)} configurations on {configs[0].device}")
        with st.status(f"Measuring {len(configs)} configurations…", expanded=True) as status:
            bar = st.progress(0.0, text="warming up")

            def progress(p: bench.SweepProgress) -> None:
                if p.result is None:
                    bar.progress(p.done / p.total, text=f"{p.config.impl}, n = {p.config.n} ({p.done + 1}/{p.total})")
                    return
                reused = server.lookup(p.config) is p.result
                server.remember(p.result)
                st.session_state["bm_partial"].append(p.result)  # kept if a rerun interrupts the loop
                st.markdown(_line(p.result, reused))
                bar.progress(p.done / p.total, text=f"{p.done}/{p.total} done")

            result = bench.run_sweep(
                spec,
                cap_bytes=cap,
                budget_s=budget,
                min_run_time=bench.DEFAULT_MIN_RUN_TIME,
                progress=progress,
                cached=server.lookup,
            )
            if result.peak_gflops:
                server.peaks[(configs[0].device, spec.dtype)] = result.peak_gflops
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


# ---- showing ------------------------------------------------------------------------------


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


def _round_mib(free: int | None) -> int | None:
    """Free memory to the MiB, so the cached table is not rebuilt for every byte that moves."""
    return None if free is None else free // 2**20 * 2**20


def show_theory(spec: bench.SweepSpec, cap: int, talk: bool) -> None:
    """Always on the page: the n×n memory table, the FLOP table and the environment card."""
    st.subheader("What to expect")
    cols = st.columns(2, gap="large")
    with cols[0]:
        st.markdown(f"**One n×n score matrix** ({spec.dtype}, batch {spec.batch}, {spec.heads} heads)")
        st.latex(r"\text{bytes} = n^2 \cdot \text{itemsize} \cdot B \cdot H")
        _cap, free = _cap_and_free(spec.device)
        table = _memory_table(spec.dtype, spec.batch, spec.heads, _round_mib(free), cap)
        st.dataframe(
            [{k: v for k, v in r.items() if k != "score_matrix_bytes"} for r in table],
            hide_index=True,
            width="stretch",
            column_config={  # short headers, so the table fits half the page in talk mode too
                "fits here": st.column_config.CheckboxColumn("fits", help="one score matrix fits in free memory"),
                "naive ≤ cap": st.column_config.CheckboxColumn(
                    "naive", help="the naive code's peak (two score matrices) fits under the cap"
                ),
                "explained ≤ cap": st.column_config.CheckboxColumn(
                    "explained", help="the explained path's peak (six score matrices) fits under the cap"
                ),
            },
        )
        if free:
            n_fit = bench.largest_fitting_n(free, spec.dtype, spec.batch, spec.heads)
            n_naive = bench.largest_fitting_n(cap, spec.dtype, spec.batch, spec.heads, copies=2)
            n_explained = bench.largest_fitting_n(cap, spec.dtype, spec.batch, spec.heads, copies=6)
            st.markdown(
                f"Largest n whose score matrix fits in the free memory here ({bench.format_bytes(free)}): "
                f"**{n_fit}**. At its peak the naive code holds two of them and the explained path six; "
                f"under the cap they reach **{n_naive}** and **{n_explained}**."
            )
    with cols[1]:
        n = spec.ns[-1] if spec.ns else DEFAULT.ns[-1]
        st.markdown(f"**FLOPs per call** at n = {n}, d = {spec.d}{', causal' if spec.causal else ''}")
        st.latex(r"\text{FLOPs} \approx 4 \cdot B \cdot H \cdot n^2 \cdot d")
        flops = _flop_table(n, spec.d, spec.batch, spec.heads, spec.causal)
        st.dataframe(
            [
                {"step": r["operation"], "formula": r["formula"], "GFLOP": r["flops"] / 1e9, "share": r["share"]}
                for r in flops
            ],
            hide_index=True,
            width="stretch",
            column_config={
                "GFLOP": st.column_config.NumberColumn(format="%.3g"),
                "share": st.column_config.ProgressColumn(format="percent", min_value=0.0, max_value=1.0),
            },
        )
        if not talk:
            st.caption(
                "The two matmuls do almost all the arithmetic; scaling and softmax are cheap in FLOPs "
                "but read and write the whole n×n matrix, which is where the naive code loses time."
            )
            st.markdown(
                "**On a 2-core CPU** (fp32, 8 heads, d = 64, n = 1024 to 4096) expect roughly: "
                "naive ≈ 3–4× the time of SDPA, explained ≈ 10–13×, tiled ≈ 1–1.6×. "
                "`python benchmarks/report.py` measures all three side by side on your machine."
            )
    environment_card(spec)


def environment_card(spec: bench.SweepSpec) -> None:
    """torch, the device, threads, CUDA and cuDNN, TF32, the cap: what to quote next to a number."""
    env = dict(_environment(spec.device))
    peak = _server().peaks.get((spec.device, spec.dtype))
    env[f"matmul peak ({spec.dtype})"] = f"{peak:.1f} GFLOP/s" if peak else "measured at the first run"
    items = list(env.items())
    with st.container(border=True):
        st.markdown("**This machine**")
        cols = st.columns(4)
        per = -(-len(items) // len(cols))
        for i, col in enumerate(cols):
            col.markdown("  \n".join(f"{k}: `{v}`" for k, v in items[i * per : (i + 1) * per]))


# ---- the recurrence as a GPU kernel ---------------------------------------------------------


@st.cache_data(show_spinner=False)
def _kernel_sources() -> dict[str, str]:
    return triton_kernel_sources()


def show_triton_kernel(device: str, talk: bool) -> None:
    """tiled.py's loop beside the Triton kernel that runs the same recurrence in one launch."""
    st.subheader("The same recurrence as one GPU kernel")
    reason = triton_available(device)
    if not talk:
        st.markdown(
            "`tiled` runs the online softmax as a Python loop: every tile is a few separate torch calls, "
            "and each score tile makes a round trip through the device's main memory. **`tiled-triton`** "
            "is the same recurrence, the same names, written as one Triton kernel. What it does that the "
            "loop cannot:"
        )
    st.markdown(
        "- **one launch** for the whole call, instead of several kernel launches per tile;\n"
        "- **tiles stay on chip**: each block of queries keeps its running max `m_i`, sum `l_i` and "
        "output `acc` in registers, and streams keys and values through shared memory (SRAM);\n"
        "- **nothing n × n in HBM**: the only thing written to GPU memory is the output."
    )
    if not talk:
        st.markdown(
            "It computes float32 inputs in full float32 (no TF32), and takes no boolean or float masks "
            "(causal only)."
        )
    if reason:
        st.info(f"`tiled-triton` {reason}; this device is the {device.upper()}.", icon=":material/memory:")
    else:
        st.success("`tiled-triton` runs on this device: add it to the implementations above.", icon=":material/memory:")
    sources = _kernel_sources()
    with st.expander("Read them side by side: `tiled.py` and its Triton kernel", expanded=not talk):
        st.caption(
            "Left: the loop in plain torch. Right: the kernel one Triton program runs per block of queries; "
            "the grid replaces the outer loop. Docstrings are left out; both files open with one."
        )
        cols = st.columns(2, gap="medium")
        for col, (file, text) in zip(cols, sources.items(), strict=True):
            col.markdown(f"**`attention_core/{file}`**")
            col.code(text, language="python", line_numbers=True, wrap_lines=True, height=640)


def _flag(name: str) -> None:
    st.session_state[name] = True


def benchmark() -> None:
    urlstate.seed(PARAMS)
    talk = urlstate.talk_mode()
    st.title("Benchmark: what attention costs here")
    urlstate.notices()
    if not talk:
        st.markdown(
            "Attention compares every query with every key, so the **naive** code that tutorials write, "
            "`softmax(q @ k.T * scale) @ v`, builds an **n × n** matrix: twice the length means four times "
            "the work and four times the memory. Fused kernels (torch's SDPA) and the **tiled** online "
            "softmax do the same arithmetic without keeping that matrix. **explained** is the walkthrough's "
            "path: it is slower than naive because it checks every n×n step for NaN and overflow and keeps "
            "every intermediate (scores, scaled, weights) for the walkthrough to show. "
            "Measure all of them on this machine."
        )
        st.caption(
            "On a GPU, **tiled** shows what a loop in plain torch can and cannot reach: it keeps memory linear "
            "in n, but each tile costs a dozen kernel launches and a round trip of its scores through GPU memory, "
            "so even with large tiles it stays tens of times slower than SDPA's fused kernel (H100, n = 16384, "
            "fp16: 66 ms against 2.25 ms). Only a fused kernel, which keeps each tile on chip, reaches that speed."
        )
    spec = sweep_controls()

    try:
        cap, _free = _cap_and_free(spec.device)
        planned = _plan(*astuple(spec), cap) if spec.impls else []
    except ValueError as exc:
        st.error(str(exc))
        return

    controls = st.columns([3, 1.2, 1.2, 2])
    budget = controls[0].slider("Time budget (s)", BUDGET.low, BUDGET.high, step=5, key=BUDGET.key)
    # Buttons report through callbacks: a callback's flag survives a rerun that a return value would not.
    with controls[1]:
        st.write("")
        st.button(
            "Run",
            key="bm_run",
            type="primary",
            icon=":material/play_arrow:",
            disabled=not spec.impls,
            on_click=_flag,
            args=("bm_run_asked",),
        )
    with controls[2]:
        st.write("")
        st.button(
            "Cancel",
            key="bm_cancel",
            icon=":material/stop:",
            help="Stops a running or queued benchmark.",
            on_click=_flag,
            args=("bm_cancel_asked",),
        )
    with controls[3]:
        st.write("")
        st.button(
            "Forget measurements",
            key="bm_forget",
            help="Measure every configuration again on the next run.",
            on_click=_server().forget,
        )
    pressed = st.session_state.pop("bm_run_asked", False)
    cancelled = st.session_state.pop("bm_cancel_asked", False)
    urlstate.publish(PARAMS)
    refused = [p for p in planned if p[3]]
    cap_note = " (Streamlit Community Cloud)" if ON_CLOUD else " (set ATTENTION_BENCH_CAP_GB to change)"
    if talk:
        cap_note = ""
    st.caption(
        f"{len(planned)} configurations · memory cap per configuration {bench.format_bytes(cap)}{cap_note}"
        + (f" · {len(refused)} will be skipped (over the cap or not available here)" if refused else "")
        + " · one benchmark at a time on this server"
    )
    if not spec.impls:
        st.warning("Choose at least one implementation.")
    if cancelled:
        st.toast("Cancelled.", icon=":material/stop:")
    if pressed and spec.impls:
        st.session_state.pop("bm_result", None)
        try:
            run(spec, budget, cap)
        except ValueError as exc:
            st.error(str(exc))
    show_results(talk)
    show_theory(spec, cap, talk)
    show_triton_kernel(spec.device, talk)


benchmark()
