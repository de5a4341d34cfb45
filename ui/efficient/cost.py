"""Cost, measured live: each route's time and peak memory against n beside dense SDPA, behind Run and Cancel under
the server's one-run lock; the crossover n and log-log slope of each; the published LRA figures beside them."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import streamlit as st

from attention_core.bench.fits import fit_loglog_slope
from attention_core.bench.measure import cpu_load_per_core, format_bytes
from attention_core.bench.sweep import DISTURBED_LOAD_PER_CORE
from attention_core.efficient.cost import BASELINE, CostCurves, RouteParams, RoutePoint, measure_routes
from attention_core.efficient.flex import compiled_keys, flex_available
from attention_core.efficient.lra import LRA_RESULTS, ROUTE_OF_MODEL, SOURCE
from attention_core.efficient.memory import memory_guard
from figures.benchmark import memory_figure, time_figure
from ui import draw
from ui.benchmark.data import cap_and_free
from ui.benchmark.params import BUDGET_MAX, N_OPTIONS
from ui.frame import talk
from ui.runlock import Holding, server_lock, wait_turn

ROUTES = ("flex-window", "sdpa-masked", "linear", "performer", "linformer")
SIZES = (16, 32, 64, 128, 256, 512, 1024)
HEADS, D, FIT_MIN_N, LRA_N = 8, 64, 512, 4096
MIN_RUN_TIME = 0.2  # seconds of timed calls per point, after the warm-up (tests set 0)


def _flag(name: str) -> None:
    st.session_state[name] = True


def cost_tab() -> None:
    a, b = draw.settings([3, 1.2, 1.2], [1, 1, 1, 2])
    kw = {"bind": "query-params"}
    routes = a[0].multiselect("Routes", ROUTES, ("flex-window", "linear", "performer", "linformer"), key="ef_routes",
                              help="Each is timed beside torch SDPA (full attention), which always runs.", **kw)
    lo, hi = sorted((a[1].select_slider("Smallest n", N_OPTIONS, 512, key="ef_nmin", **kw),
                     a[2].select_slider("Largest n", N_OPTIONS, 4096, key="ef_nmax", **kw)))  # fmt: skip
    params = RouteParams(
        window=b[0].select_slider("Window w", SIZES[1:], 256, key="ef_cwin", help="flex-window, sdpa-masked", **kw),
        features=b[1].select_slider("Features m", SIZES, 256, key="ef_cfeat", help="performer", **kw),
        rank=b[2].select_slider("Rank k", SIZES, 256, key="ef_crank", help="linformer (at most n)", **kw),
    )
    budget = b[3].slider("Time budget (s)", 5, BUDGET_MAX, 60, step=5, key="ef_budget", **kw)
    c = st.columns([1, 1, 5], vertical_alignment="center")
    c[0].button("Run", key="ef_run", type="primary", icon=":material/play_arrow:", disabled=not routes,
                on_click=_flag, args=("ef_run_asked",))  # fmt: skip
    c[1].button("Cancel", key="ef_cancel", icon=":material/stop:", on_click=_flag, args=("ef_cancel_asked",),
                help="Stops a running or queued measurement.")  # fmt: skip
    ns = tuple(n for n in N_OPTIONS if lo <= n <= hi)
    fallback = flex_available("cpu") if "flex-window" in routes else None
    runs = list(dict.fromkeys("sdpa-masked" if r == "flex-window" and fallback else r for r in routes))
    cap = cap_and_free("cpu")[0]
    guard = {"cap_bytes": cap, "features": params.features}
    skips = [why for r in (BASELINE, *runs) for n in ns if (why := memory_guard(r, n, rank=min(params.rank, n),
                                                                                 **guard))]  # fmt: skip
    c[2].caption(f"{len(ns)} sizes × {len(runs) + 1} routes · {HEADS} heads, d = {D}, float32, on the CPU · memory "
                 f"cap {format_bytes(cap)}" + (f" · {len(skips)} skipped: {skips[0]}…" if skips else "")
                 + ("" if talk() else " · one measurement at a time on this server"))  # fmt: skip
    if fallback:
        st.info(f"FlexAttention cannot run compiled here: {fallback}. The window runs as **sdpa-masked** instead "
                "(torch SDPA with the window as a dense mask), labelled so: it still does all n² work.",
                icon=":material/build:")  # fmt: skip
    elif "flex-window" in routes and not compiled_keys():
        draw.prose("The first Run compiles FlexAttention for this shape: about 20 s on a 2-core CPU, once per "
                   "server. The compile time is shown apart; the timings are of the compiled kernel.")  # fmt: skip
    if not routes:
        st.warning("Choose at least one route.")
    if st.session_state.pop("ef_cancel_asked", False):
        st.toast("Cancelled.", icon=":material/stop:")
    if st.session_state.pop("ef_run_asked", False) and routes:
        st.session_state.pop("ef_result", None)
        measure(runs, ns, params, budget, cap, fallback)
    show_results()


def _line(p: RoutePoint) -> str:
    if p.status != "ok":
        return f":material/block: `{p.label}` n = {p.n}: **{p.status}**, {p.note}"
    compiled = f", compiled first in {p.compile_s:.1f} s" if p.compiled_now else ""
    return f":material/check: `{p.label}` n = {p.n}: {p.median_ms:.3g} ms, {format_bytes(p.peak_bytes)}{compiled}"


def measure(routes: list[str], ns: tuple[int, ...], params: RouteParams, budget: int, cap: int,
            fallback: str | None) -> None:  # fmt: skip
    """Every route at every n under the server's lock, a line per point; kept in the session as it lands."""
    server, holding, points = server_lock(), Holding(), []
    st.session_state["ef_partial"] = points  # kept if Cancel (a rerun) interrupts the loop
    order = [f"{r} at n = {n}" for n in sorted(ns) for r in dict.fromkeys((BASELINE, *routes))]
    try:
        if not wait_turn(server, holding):
            return
        server.describe(f"Beyond n²: {len(order)} points")
        started, load = time.perf_counter(), cpu_load_per_core()
        with st.status(f"Measuring {len(order)} points…", expanded=True) as status:
            bar = st.progress(0.0, text="starting")

            def announce() -> bool:  # asked before each point: say which one is next
                done = len(points)
                bar.progress(done / len(order), text=f"{order[done]} ({done + 1}/{len(order)})")
                return False

            def landed(p: RoutePoint) -> None:
                points.append(p)
                st.markdown(_line(p))

            measure_routes(routes, ns, params=params, budget_s=budget, should_stop=announce, on_point=landed,
                           heads=HEADS, d=D, device="cpu", cap_bytes=cap, min_run_time=MIN_RUN_TIME)  # fmt: skip
            status.update(label=f"Done in {time.perf_counter() - started:.1f} s", state="complete", expanded=False)
        st.session_state["ef_result"] = {"points": tuple(points), "fallback": fallback, "load": load}
        st.session_state.pop("ef_partial", None)
    finally:
        if holding.ours:  # also when Cancel interrupted the loop at a Streamlit call
            server.release()


def _rows(points: tuple[RoutePoint, ...]) -> list[dict[str, Any]]:
    return [asdict(p) | {"impl": p.route} for p in points]


def _fits(curves: CostCurves) -> dict[str, tuple[float, float, int, int]]:
    fits = {}
    for route in curves.routes():
        big = [(n, t) for n, t in zip(*curves.times(route), strict=True) if n >= FIT_MIN_N]
        if len(big) >= 2:
            fits[route] = (*fit_loglog_slope(*zip(*big, strict=True)), big[0][0], big[-1][0])
    return fits


def _time(is_talk: bool, points: tuple[RoutePoint, ...]) -> Any:
    return time_figure(_rows(points), _fits(CostCurves(points)), talk=is_talk)


def _memory(is_talk: bool, points: tuple[RoutePoint, ...]) -> Any:
    return memory_figure(_rows(points), talk=is_talk)


def show_results() -> None:
    saved, partial = st.session_state.get("ef_result"), st.session_state.get("ef_partial")
    if partial:
        st.warning(f"The last run was stopped after {len(partial)} point(s); showing what it measured.")
    elif not saved:
        st.info("Press **Run** to measure. Nothing runs until you do.", icon=":material/play_arrow:")
        lra_table(CostCurves(()), None)
        return
    points = tuple(partial) if partial else saved["points"]
    curves = CostCurves(points)
    if saved and (saved["load"] or 0) > DISTURBED_LOAD_PER_CORE:
        st.warning(f"The CPU was busy with other work when this run started (load {saved['load']:.1f} per core): "
                   "these timings are disturbed. Run again when the machine is quiet.", icon=":material/warning:")
    draw.chart(draw.figure(_time, talk(), points), "ef_time", fit="efficient.Cost")
    draw.chart(draw.figure(_memory, talk(), points), "ef_memory", fit="efficient.Cost")
    flex = [p for p in points if p.route == "flex-window" and p.compile_s is not None]
    if flex:
        paid = "paid in this run" if any(p.compiled_now for p in flex) else "compiled earlier on this server"
        st.caption(f"FlexAttention's compile, not in the timings: {flex[0].compile_s:.1f} s ({paid}); its block "
                   f"mask took {max(p.prepare_s or 0 for p in flex) * 1e3:.0f} ms at most.")  # fmt: skip
    largest = max((p.n for p in points if p.route == BASELINE and p.status == "ok"), default=None)
    sdpa = dict(zip(*curves.times(BASELINE), strict=True))
    table, ratio = [], f"× SDPA's speed at n = {largest}" if largest else "× SDPA's speed"
    for route in curves.routes():
        ns, ms = curves.times(route)
        at = dict(zip(ns, ms, strict=True))
        cross, slope = curves.crossover(route), curves.slope(route, FIT_MIN_N)
        table.append({"route": next(p.label for p in points if p.route == route),
                      "backend": next((p.backend for p in points if p.route == route and p.backend), "—"),
                      "faster than SDPA from n": None if route == BASELINE else cross,
                      "log-log slope": slope,
                      ratio: sdpa[largest] / at[largest] if largest in at else None,
                      })  # fmt: skip
    st.dataframe(table, hide_index=True, width="stretch", placeholder="—", column_config={
        "log-log slope": draw.NUMBER(format="%.2f", help=f"fitted over n ≥ {FIT_MIN_N}: 1 = linear, 2 = quadratic"),
        "faster than SDPA from n": draw.NUMBER(format="%d", help="faster at this n and every larger n measured"),
        ratio: draw.NUMBER(format="%.2f"),
    })  # fmt: skip
    lra_table(curves, saved["fallback"] if saved else None)


def lra_table(curves: CostCurves, fallback: str | None) -> None:
    """The published Long Range Arena figures, each model beside the route measured here that stands for it."""
    st.markdown("**Long Range Arena (Tay et al. 2021) beside this machine**")
    sdpa = dict(zip(*curves.times(BASELINE), strict=True))
    at = max((n for n in sdpa if n <= LRA_N), default=None)
    rows = []
    for r in LRA_RESULTS:
        route = ROUTE_OF_MODEL.get(r.model)
        if route is None:
            continue
        route = "sdpa-masked" if route == "flex-window" and fallback else route
        mine = dict(zip(*curves.times(route), strict=True))
        rows.append({"model": r.model, "LRA accuracy %": r.average, "LRA speed ×": r.speedup_4k,
                     "LRA memory GB": r.memory_gb_4k, "route here": route,
                     "here: speed ×": sdpa[at] / mine[at] if at in mine else None})  # fmt: skip
    st.dataframe(rows, hide_index=True, width="stretch", placeholder="—", column_config={
        "LRA accuracy %": draw.NUMBER(format="%.2f"), "LRA speed ×": draw.NUMBER(format="%.1f"),
        "here: speed ×": draw.NUMBER(format="%.2f", help="SDPA's median time ÷ the route's, one forward call"),
    })  # fmt: skip
    if not talk():
        st.caption(
            "LRA: accuracy is the mean over five tasks of models trained for them; speed is training steps per second "
            "relative to the Transformer at 4K tokens (batch 32, 4×4 TPU v3, JAX), memory the peak per device. Here: "
            f"one forward call of the attention alone, SDPA's median time ÷ the route's at n = {at or LRA_N} on this "
            "CPU. Different things measured, so the table is context, not a prediction. window+globals and BigBird are "
            f"not timed here (see their patterns on the first tab). Source: {SOURCE}."
        )
