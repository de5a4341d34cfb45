"""Benchmark: what attention costs on this CPU or GPU, measured, with the theory beside it."""

from __future__ import annotations

import streamlit as st

from attention_core import bench
from ui import draw
from ui.benchmark import controls, data, results, running, theory
from ui.benchmark.params import ON_CLOUD
from ui.frame import talk
from ui.page import heading


def benchmark() -> None:
    heading("Benchmark: what attention costs here")
    draw.prose(
        "Attention compares every query with every key, so the **textbook** code that tutorials write, "
        "`softmax(q @ k.T * scale) @ v`, builds an **n × n** matrix: twice the length means four times "
        "the work and four times the memory. Fused kernels (torch's SDPA) and the **tiled** online "
        "softmax do the same arithmetic without keeping that matrix. **trace** is the walkthrough's "
        "path: it is slower than textbook because it checks every n×n step for NaN and overflow and keeps "
        "every intermediate (scores, scaled, weights) for the walkthrough to show. "
        "Measure all of them on this machine."
    )
    spec = controls.sweep_controls()
    try:
        cap, free = data.cap_and_free(spec.device)
        planned = data.plan(spec, cap) if spec.impls else []
    except ValueError as exc:
        st.error(str(exc))
        return
    budget, pressed = controls.run_controls(spec)
    refused = [p for p in planned if p.refusal]
    where = "" if talk() else " (Streamlit Community Cloud)" if ON_CLOUD else " (set ATTENTION_BENCH_CAP_GB to change)"
    st.caption(
        f"{len(planned)} configurations · memory cap per configuration {bench.format_bytes(cap)}{where}"
        + (f" · {len(refused)} will be skipped (over the cap or not available here)" if refused else "")
        + " · one benchmark at a time on this server"
    )
    if not spec.impls:
        st.warning("Choose at least one implementation.")
    if pressed and spec.impls:
        try:
            running.run(spec, budget, cap, page="bm", store=running.results(), min_run_time=bench.DEFAULT_MIN_RUN_TIME)
        except ValueError as exc:
            st.error(str(exc))
    results.show_results()
    theory.show_theory(spec, cap, free)
    theory.show_triton_kernel(spec.device)


benchmark()
