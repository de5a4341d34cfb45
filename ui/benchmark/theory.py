"""What to expect, before any run: the n×n memory table, the FLOP table, the card describing this machine, and
tiled.py beside the Triton kernel that runs its recurrence in one launch."""

from __future__ import annotations

import streamlit as st

from attention_core import bench
from attention_core.bench.memory_models import PEAK_SQUARES
from attention_core.tiled_triton import triton_available, triton_kernel_sources
from ui import draw
from ui.benchmark import data, running
from ui.benchmark.params import DEFAULT
from ui.frame import talk

TICK = st.column_config.CheckboxColumn
WORDS = {2: "two", 3: "three", 6: "six", 7: "seven"}
EXPECT = {  # on a 2-core CPU, fp32, 8 heads, d = 64, n = 1024 to 4096
    "fwd": "expect roughly: textbook ≈ 3–4× the time of SDPA, trace ≈ 10–13×, tiled ≈ 1–1.6×.",
    "bwd": "SDPA's backward takes 2–3× its forward; tiled's backward ≈ 1.1–1.3× SDPA's.",
    "fwd+bwd": "expect roughly, for forward + backward: textbook ≈ 2.5–3× the time of SDPA, tiled ≈ 1.2–1.4×.",
}


def show_theory(spec: bench.SweepSpec, cap: int, free: int | None) -> None:
    """Always on the page: the n×n memory table, the FLOP table and the environment card."""
    st.subheader("What to expect")
    left, right = st.columns(2, gap="large")
    textbook, trace = PEAK_SQUARES[spec.mode]
    n = spec.ns[-1] if spec.ns else DEFAULT.ns[-1]
    with left:
        st.markdown(f"**One n×n score matrix** ({spec.dtype}, batch {spec.batch}, {spec.heads} heads)")
        st.latex(r"\text{bytes} = n^2 \cdot \text{itemsize} \cdot B \cdot H")
        rounded = None if free is None else free // 2**20 * 2**20  # to the MiB: not a new table per byte that moves
        st.dataframe(
            data.memory_table(spec.dtype, spec.batch, spec.heads, rounded, cap, spec.mode), hide_index=True,
            width="stretch", column_config={  # short headers, so the table fits half the page in talk mode too
                "fits here": TICK("fits", help="one score matrix fits in free memory"),
                "textbook ≤ cap": TICK("textbook", help=f"the textbook code's peak ({WORDS[textbook]} score "
                                       "matrices) fits under the cap"),
                "trace ≤ cap": TICK("trace", help=f"the traced path's peak ({WORDS[trace]} score "
                                    "matrices) fits under the cap"),
            },
        )  # fmt: skip
        if free:
            n_fit, n_textbook, n_trace = (
                bench.largest_fitting_n(limit, spec.dtype, spec.batch, spec.heads, copies=copies)
                for limit, copies in ((free, 1), (cap, textbook), (cap, trace))
            )
            when = "in training" if spec.mode != "fwd" else "at its peak"
            st.markdown(
                f"Largest n whose score matrix fits in the free memory here ({bench.format_bytes(free)}): "
                f"**{n_fit}**. {when.capitalize()} the textbook code holds {WORDS[textbook]} of them and the traced "
                f"path {WORDS[trace]}; under the cap they reach **{n_textbook}** and **{n_trace}**."
            )
    with right:
        st.markdown(f"**FLOPs per {bench.MODE_NAMES[spec.mode]} call** at n = {n}, d = {spec.d}"
                    f"{', causal' if spec.causal else ''}")  # fmt: skip
        st.latex(r"\text{FLOPs} \approx " + bench.flop_formula(spec.mode).replace("·", r" \cdot ").replace("²", "^2"))
        st.dataframe(
            data.flop_table(n, spec.d, spec.batch, spec.heads, spec.causal, spec.mode), hide_index=True,
            width="stretch", height="content", column_config={  # 11 rows in fwd+bwd: no scrolling
                "GFLOP": draw.NUMBER(format="%.3g"),
                "share": st.column_config.ProgressColumn(format="percent", min_value=0.0, max_value=1.0),
            },
        )  # fmt: skip
        if not talk():
            st.caption(
                "The matmuls do almost all the arithmetic; scaling and softmax are cheap in FLOPs "
                "but read and write the whole n×n matrix, which is where the textbook code loses time."
                + (" The backward counts five matmuls to the forward's two, as FlashAttention's and Triton's "
                   "benchmarks do (QKᵀ recomputed; the textbook backward keeps P and does four)."
                   if spec.mode != "fwd" else "")
            )
        draw.prose(f"**On a 2-core CPU** (fp32, 8 heads, d = 64, n = 1024 to 4096) {EXPECT[spec.mode]} "
                   "`python benchmarks/report.py` measures them side by side on your machine.")  # fmt: skip
    if spec.mode != "fwd":
        training_memory(spec, n)
    environment_card(spec)


def training_memory(spec: bench.SweepSpec, n: int) -> None:
    """What the backward keeps and what it recomputes, and each implementation's training peak at n."""
    st.markdown("**What the backward keeps, and what it recomputes**")
    st.latex(r"\begin{aligned} dV &= P^\top dO & dP &= dO\,V^\top & dS &= P \circ (dP - D),\quad "
             r"D = \operatorname{rowsum}(dO \circ O) \\ dQ &= dS\,K \cdot s & dK &= dS^\top Q \cdot s & "
             r"P &= \exp(S - \mathrm{lse}) \end{aligned}")  # fmt: skip
    if talk():  # no prose: the table takes the width
        numbers = st.container()
    else:
        words, numbers = st.columns([3, 2], gap="large")
        words.markdown(
            "Softmax's backward needs only the weights P and one number per row, D. The **textbook** code (and "
            "torch's math kernel) lets autograd keep P, an n×n matrix per head, from the forward to the "
            "backward; at the backward's peak P, its gradient dP and the scores' gradient dS are all alive: "
            "three n×n. **trace** keeps three n×n of its traced softmax and holds five more at its peak. "
            "**FlashAttention** (SDPA's fused kernels) and **tiled** keep only the output O and each row's "
            "log-sum-exp (lse): O(n) numbers per head. Their backward recomputes each tile's scores S = QKᵀ "
            "and rebuilds P = exp(S − lse) tile by tile: a fifth matmul, for never storing n×n."
        )
    table = [{"impl": name, **{col: bench.format_bytes(bench.get_impl(name).predicted_bytes(
                  bench.BenchConfig(name, n, **(spec.shape() | {"mode": mode}))))
                               for col, mode in (("forward", "fwd"), ("forward + backward", "fwd+bwd"))}}
             for name in spec.impls if not bench.get_impl(name).no_backward]  # fmt: skip
    if table:
        numbers.caption(f"Predicted peak beyond the inputs at n = {n} (the models the Memory tab holds "
                        "measurements to)")  # fmt: skip
        numbers.dataframe(table, hide_index=True, width="stretch")


def environment_card(spec: bench.SweepSpec) -> None:
    """torch, the device, threads, CUDA and cuDNN, TF32, the cap: what to quote next to a number."""
    peak = running.results().peaks.get((spec.device, spec.dtype))
    items = [*data.environment(spec.device),
             (f"matmul peak ({spec.dtype})", f"{peak:.1f} GFLOP/s" if peak else "measured at the first run")]
    with st.container(border=True):
        st.markdown("**This machine**")
        per = -(-len(items) // 4)
        for i, col in enumerate(st.columns(4)):
            col.markdown("  \n".join(f"{k}: `{v}`" for k, v in items[i * per : (i + 1) * per]))


_kernel_sources = st.cache_data(show_spinner=False)(triton_kernel_sources)  # two files, parsed once


def show_triton_kernel(device: str) -> None:
    """tiled.py's loop beside the Triton kernel that runs the same recurrence in one launch."""
    st.subheader("The same recurrence as one GPU kernel")
    draw.prose(
        "`tiled` runs the online softmax as a Python loop: its memory grows as n, but every tile is a dozen "
        "kernel launches and a round trip of its scores through the device's main memory, so on a GPU it stays "
        "tens of times slower than SDPA's fused kernel (H100, n = 16384, fp16: 66 ms against 2.25 ms). "
        "**`tiled-triton`** is the same recurrence, the same names, written as one Triton kernel. What it does "
        "that the loop cannot:"
    )
    st.markdown(
        "- **one launch** for the whole call, instead of several kernel launches per tile;\n"
        "- **tiles stay on chip**: each block of queries keeps its running max `m_i`, sum `l_i` and "
        "output `acc` in registers, and streams keys and values through shared memory (SRAM);\n"
        "- **nothing n × n in HBM**: the only thing written to GPU memory is the output."
    )
    draw.prose("It computes float32 inputs in full float32 (no TF32), and takes no boolean or float masks "
               "(causal only).")
    reason = triton_available(device)
    if reason:
        st.info(f"`tiled-triton` {reason}; this device is the {device.upper()}.", icon=":material/memory:")
    else:
        st.success("`tiled-triton` runs on this device: add it to the implementations above.", icon=":material/memory:")
    with st.expander("Read them side by side: `tiled.py` and its Triton kernel", expanded=not talk()):
        st.caption(
            "Left: the loop in plain torch. Right: the kernel one Triton program runs per block of queries; "
            "the grid replaces the outer loop. Docstrings are left out; both files open with one."
        )
        for col, (file, text) in zip(st.columns(2, gap="medium"), _kernel_sources().items(), strict=True):
            col.markdown(f"**`attention_core/{file}`**")
            col.code(text, language="python", line_numbers=True, wrap_lines=True, height=640)
