"""The benchmark page's controls, each bound to the URL where it is drawn: read the widgets, return plain values."""

from __future__ import annotations

import streamlit as st

from attention_core import bench
from ui import links
from ui.benchmark import running
from ui.benchmark.params import BUDGET_MAX, D_OPTIONS, DEFAULT, DEFAULT_DEVICE, DEVICES, N_OPTIONS


def _old_impls(old: str) -> str | list[str] | None:
    """Links from before: a comma-separated list (``naive,tiled``) and the entries' older names (naive)."""
    names = [bench.RENAMED.get(s.strip(), s.strip()) for s in old.split(",") if s.strip()]
    return names if len(names) > 1 else names[0] if names else None


DEVICE_NAMES = {d: "CPU" if d == "cpu" else f"CUDA ({d})" for d in DEVICES}


def sweep_controls() -> bench.SweepSpec:
    """Read the widgets; return the sweep they describe."""
    links.upgrade(bm_impl=_old_impls, bm_causal=links.on_off, bm_device=DEVICE_NAMES)  # links from before bind
    described = "\n".join(f"- **{name}**: {bench.IMPLEMENTATIONS[name].description}" for name in bench.EXACT)
    mode = st.segmented_control("Timed pass", bench.MODES, default=DEFAULT.mode, required=True,
                                format_func=bench.MODE_NAMES.__getitem__, key="bm_mode", bind="query-params",
                                help="**forward**: the forward pass. **backward**: the backward pass alone; the "
                                "forward runs once, outside the timing, as FlashAttention's and Triton's benchmarks "
                                "do. **forward + backward**: one training step. numpy has no backward.")
    top, row = st.columns([4, 2, 2]), st.columns([2, 2, 2, 2, 3, 2], vertical_alignment="bottom")
    impls = top[0].multiselect("Implementations", bench.EXACT, DEFAULT.impls, key="bm_impl",
                               bind="query-params", help=described)
    lo = top[1].select_slider("Smallest n", N_OPTIONS, DEFAULT.ns[0], key="bm_nmin", bind="query-params")
    hi = top[2].select_slider("Largest n", N_OPTIONS, DEFAULT.ns[-1], key="bm_nmax", bind="query-params",
                              help="n runs over the powers of two between.")
    # The device first: its dtypes depend on it (a float16 left from a CUDA device falls back to float32).
    device = row[4].selectbox("Device", DEVICES, DEVICES.index(DEFAULT_DEVICE), format_func=DEVICE_NAMES.__getitem__,
                              key="bm_device", bind="query-params")
    dtypes = ("float32", "bfloat16", "float16") if device.startswith("cuda") else ("float32", "bfloat16")
    lo, hi = sorted((lo, hi))
    return bench.SweepSpec(
        impls=tuple(impls), ns=tuple(n for n in N_OPTIONS if lo <= n <= hi), device=device,
        d=row[0].select_slider("Head size d", D_OPTIONS, DEFAULT.d, key="bm_d", bind="query-params"),
        heads=row[1].slider("Heads", 1, 16, DEFAULT.heads, key="bm_heads", bind="query-params"),
        batch=row[2].slider("Batch", 1, 8, DEFAULT.batch, key="bm_batch", bind="query-params"),
        dtype=row[3].selectbox("dtype", dtypes, key="bm_dtype", bind="query-params",
                               help="float16 is offered on CUDA devices."),
        causal=row[5].toggle("Causal", DEFAULT.causal, key="bm_causal", bind="query-params",
                             help="Each query sees only earlier keys: half the work."),
        mode=mode,
    )  # fmt: skip


def run_controls(spec: bench.SweepSpec) -> tuple[int, bool]:
    """The time budget and the Run, Cancel and Forget buttons: the budget, and whether Run was pressed."""
    c = st.columns([3, 1.2, 1.2, 2], vertical_alignment="center")
    budget = c[0].slider("Time budget (s)", 5, BUDGET_MAX, 20, step=5, key="bm_budget", bind="query-params")
    pressed = running.run_buttons(c[1], c[2], "bm", disabled=not spec.impls, what="benchmark")
    c[3].button("Forget measurements", key="bm_forget", help="Measure every configuration again on the next run.",
                on_click=running.results().rows.clear)
    return budget, pressed
