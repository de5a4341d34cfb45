"""Cost, measured live: each route's time and peak memory against n beside dense SDPA, behind Run and Cancel under
the server's one-run lock; the crossover n and log-log slope of each; the published LRA figures beside them."""

from __future__ import annotations

import streamlit as st

from attention_core import bench
from attention_core.efficient.flex import compiled_keys, flex_available
from attention_core.efficient.lra import ROUTE_OF_MODEL, SOURCE, lra_result
from ui import draw
from ui.benchmark import running
from ui.benchmark.data import cap_and_free, plan
from ui.benchmark.params import BUDGET_MAX, N_OPTIONS
from ui.benchmark.results import memory_figure, time_figure
from ui.frame import talk

BASELINE = "sdpa"  # full attention, timed beside every route
SIZES = (16, 32, 64, 128, 256, 512, 1024)
HEADS, D, LRA_N = 8, 64, 4096
MIN_RUN_TIME = 0.2  # seconds of timed calls per point, after the warm-up (tests set 0)


def cost_tab() -> None:
    a, b = draw.settings([3, 1.2, 1.2], [1, 1, 1, 2])
    kw = {"bind": "query-params"}
    routes = a[0].multiselect("Routes", bench.ROUTES, ("flex-window", "linear", "performer", "linformer"),
                              key="ef_routes", help="Each is timed beside torch SDPA (full attention), which always "
                              "runs.", **kw)  # fmt: skip
    lo, hi = sorted((a[1].select_slider("Smallest n", N_OPTIONS, 512, key="ef_nmin", **kw),
                     a[2].select_slider("Largest n", N_OPTIONS, 4096, key="ef_nmax", **kw)))  # fmt: skip
    params = bench.RouteParams(
        window=b[0].select_slider("Window w", SIZES[1:], 256, key="ef_cwin", help="flex-window, sdpa-masked", **kw),
        features=b[1].select_slider("Features m", SIZES, 256, key="ef_cfeat", help="performer", **kw),
        rank=b[2].select_slider("Rank k", SIZES, 256, key="ef_crank", help="linformer (at most n)", **kw),
    )
    budget = b[3].slider("Time budget (s)", 5, BUDGET_MAX, 60, step=5, key="ef_budget", **kw)
    c = st.columns([1, 1, 5], vertical_alignment="center")
    pressed = running.run_buttons(c[0], c[1], "ef", disabled=not routes, what="measurement")
    ns = tuple(n for n in N_OPTIONS if lo <= n <= hi)
    fallback = flex_available("cpu") if "flex-window" in routes else None
    runs = list(dict.fromkeys("sdpa-masked" if r == "flex-window" and fallback else r for r in routes))
    cap = cap_and_free("cpu")[0]
    spec = bench.SweepSpec((BASELINE, *(params.label(r) for r in runs)), ns, heads=HEADS, d=D, device="cpu")
    skips = [f"{p.config.impl} at n = {p.config.n} {p.refusal}" for p in plan(spec, cap) if p.refusal]
    c[2].caption(f"{len(ns)} sizes × {len(runs) + 1} routes · {HEADS} heads, d = {D}, float32, on the CPU · memory "
                 f"cap {bench.format_bytes(cap)}" + (f" · {len(skips)} skipped: {skips[0]}…" if skips else "")
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
    if pressed and routes:
        running.run(spec, budget, cap, page="ef", fallback=fallback, min_run_time=MIN_RUN_TIME,
                    check_correctness=False)  # fmt: skip
    show_results()


def _times(rows: tuple[bench.BenchResult, ...], impl: str) -> dict[int, float]:
    return {r.n: r.median_ms for r in rows if r.impl == impl and r.status == "ok" and r.median_ms}


def show_results() -> None:
    shown = running.last_run("ef", "point(s)")
    if shown is None:
        lra_table((), None)
        return
    rows, saved = tuple(shown[0]), shown[1]
    if saved is not None and saved.result.disturbed:
        st.warning(
            f"The CPU was busy with other work when this run started (load {saved.result.load_per_core:.1f} per "
            "core): these timings are disturbed. Run again when the machine is quiet.",
            icon=":material/warning:",
        )
    draw.chart(draw.figure(time_figure, talk(), rows), "ef_time", fit="efficient.Cost")
    draw.chart(draw.figure(memory_figure, talk(), rows), "ef_memory", fit="efficient.Cost")
    sdpa, fits = _times(rows, BASELINE), bench.scaling_fits(rows)
    largest = max(sdpa, default=None)
    table, ratio = [], f"× SDPA's speed at n = {largest}" if largest else "× SDPA's speed"
    for impl in dict.fromkeys(r.impl for r in rows):
        at = _times(rows, impl)
        table.append({"route": impl,
                      "backend": next((r.backend for r in rows if r.impl == impl and r.backend), "—"),
                      "faster than SDPA from n": None if impl == BASELINE else bench.crossover_n(rows, impl),
                      "log-log slope": fits[impl].time_slope if impl in fits else None,
                      ratio: sdpa[largest] / at[largest] if largest in at else None,
                      })  # fmt: skip
    st.dataframe(table, hide_index=True, width="stretch", placeholder="—", column_config={
        "log-log slope": draw.NUMBER(format="%.2f", help=f"fitted where the time grows, over the three largest n ≥ "
                                     f"{bench.FIT_MIN_N}: 1 = linear, 2 = quadratic"),
        "faster than SDPA from n": draw.NUMBER(format="%d", help="faster at this n and every larger n measured"),
        ratio: draw.NUMBER(format="%.2f"),
    })  # fmt: skip
    lra_table(rows, saved.fallback if saved is not None else None)


def lra_table(measured: tuple[bench.BenchResult, ...], fallback: str | None) -> None:
    """The published Long Range Arena figures, each model beside the route measured here that stands for it."""
    st.markdown("**Long Range Arena (Tay et al. 2021) beside this machine**")
    sdpa = _times(measured, BASELINE)
    labels = {route[0]: r.impl for r in measured if (route := bench.parse_route(r.impl))}
    at = max((n for n in sdpa if n <= LRA_N), default=None)
    rows = []
    for model, route in ROUTE_OF_MODEL.items():
        r = lra_result(model)
        route = "sdpa-masked" if route == "flex-window" and fallback else route
        mine = _times(measured, labels.get(route, route))
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
