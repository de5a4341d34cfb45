"""The frame around every page: the sidebar with the device and the talk-mode switch."""

from __future__ import annotations

import streamlit as st

from attention_core import device_info

from . import urlstate


@st.cache_resource(show_spinner=False)
def _device_summary() -> dict[str, str]:
    info = device_info()
    gpu = info.device.startswith("cuda")
    mem = f"{info.total_memory_bytes / 2**30:.0f} GiB" if info.total_memory_bytes else "unknown"
    return {
        "kind": "CUDA GPU" if gpu else "CPU",
        "name": info.name,
        "device": info.device,
        "torch": info.torch_version,
        "threads": str(info.threads),
        "memory": mem,
    }


def sidebar() -> None:
    """Draw the shared sidebar. Called once per run by ``app.py``."""
    urlstate.seed(urlstate.FRAME_PARAMS)
    with st.sidebar:
        st.toggle(
            "Talk mode",
            key=urlstate.TALK.key,
            help="Larger type and less prose, for a projector. Kept in the link.",
        )
        d = _device_summary()
        st.markdown(f"**Computing on:** {d['kind']}  \n{d['name']}")
        st.caption(f"torch {d['torch']} · {d['threads']} threads · {d['memory']} memory")


def talk_css() -> None:
    """In talk mode, enlarge the page's text so it reads from the back of a hall."""
    if urlstate.talk_mode():
        st.html(
            "<style>"
            "[data-testid='stMain'] [data-testid='stMarkdown'] p,"
            "[data-testid='stMain'] [data-testid='stMarkdown'] li {font-size: 1.3rem; line-height: 1.45;}"
            "[data-testid='stMetricValue'] {font-size: 2.4rem;}"
            "[data-testid='stMainBlockContainer'] {padding-top: 4.2rem;}"
            ".katex {font-size: 1.5em !important;}"
            "</style>"
        )
