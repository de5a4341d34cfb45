"""The benchmark page's controls: read the widgets, return plain values."""

from __future__ import annotations

import math

import streamlit as st

from attention_core import bench
from ui import urlstate
from ui.benchmark.params import (
    BATCH,
    BUDGET,
    CAUSAL,
    D_OPTIONS,
    DEFAULT,
    DEVICE,
    DEVICES,
    DTYPE,
    HEADS,
    IMPLS,
    N_FROM,
    N_MIN,
    N_OPTIONS,
    N_TO,
    D,
)
from ui.benchmark.server import results


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


def _flag(name: str) -> None:
    st.session_state[name] = True


def run_controls(spec: bench.SweepSpec) -> tuple[int, bool, bool]:
    """The time budget and the Run, Cancel and Forget buttons: the budget, and whether Run or Cancel was pressed."""
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
            on_click=results().forget,
        )
    pressed = st.session_state.pop("bm_run_asked", False)
    cancelled = st.session_state.pop("bm_cancel_asked", False)
    return budget, pressed, cancelled
