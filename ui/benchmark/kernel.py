"""The online-softmax recurrence as one GPU kernel: tiled.py beside its Triton kernel."""

from __future__ import annotations

import streamlit as st

from attention_core.tiled_triton import triton_available, triton_kernel_sources
from ui import draw
from ui.frame import talk


@st.cache_data(show_spinner=False)
def _kernel_sources() -> dict[str, str]:
    return triton_kernel_sources()


def show_triton_kernel(device: str) -> None:
    """tiled.py's loop beside the Triton kernel that runs the same recurrence in one launch."""
    st.subheader("The same recurrence as one GPU kernel")
    draw.prose(
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
