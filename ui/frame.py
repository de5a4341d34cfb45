"""The frame around every page: page config, the sidebar (talk mode, the device), link notices.

``app.py`` calls, in order: :func:`page_config`, ``st.navigation``, :func:`sidebar`, the page, :func:`after_page`.
"""

from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from . import links

TALK = "talk"  # the shared flag: larger type and less prose, for a projector; bound to the URL on every page
TALK_CSS = (
    "<style>"
    "[data-testid='stMain'] [data-testid='stMarkdown'] p,"
    "[data-testid='stMain'] [data-testid='stMarkdown'] li {font-size: 1.3rem; line-height: 1.45;}"
    "[data-testid='stMetricValue'] {font-size: 2.4rem;}"
    "[data-testid='stMainBlockContainer'] {padding-top: 4rem; padding-bottom: 2rem;}"
    ".katex {font-size: 1.5em !important;}"
    "</style>"
)


def talk() -> bool:
    """Whether the presenter's talk mode is on."""
    return bool(st.session_state.get(TALK, False))


def page_config() -> None:
    """``st.set_page_config`` for every page; a link in talk mode opens with the sidebar collapsed."""
    links.remember()
    opened_in_talk = st.session_state.get(TALK, st.query_params.get(TALK, "").lower() in ("true", "1", "on", "yes"))
    st.set_page_config(
        page_title="Attention, step by step",
        page_icon=":material/blur_on:",
        layout="wide",
        initial_sidebar_state="collapsed" if opened_in_talk else "expanded",
    )


def sidebar() -> DeltaGenerator:
    """The talk-mode switch (an old ``talk=1`` link upgraded first); returns the page's notice slot."""
    links.upgrade(**{TALK: links.on_off})
    st.sidebar.toggle(
        "Talk mode", key=TALK, bind="query-params",
        help="Larger type and less prose, for a projector; the sidebar starts collapsed. Kept in the link.",
    )  # fmt: skip
    if talk():
        st.html(TALK_CSS)
    return st.container()


@st.cache_resource(show_spinner=False)
def _device_line() -> tuple[str, str]:
    from attention_core.device import default_device, device_info

    info = device_info(default_device())
    mem = f"{info.total_memory_bytes / 2**30:.0f} GiB" if info.total_memory_bytes else "unknown"
    kind = "CUDA GPU" if info.device.startswith("cuda") else "CPU"
    details = f"torch {info.torch_version} · {info.threads} threads · {mem} memory"
    return f"**Computing on:** {kind}  \n{info.name}", details


def after_page(notices: DeltaGenerator) -> None:
    """Once the page is drawn: its link's notices, the link box and the device line.

    The device line needs torch, which the home page does not load for itself: asking for it last
    lets that page appear first.
    """
    links.report(notices)
    links.link_box()
    try:
        line, details = _device_line()
    except Exception:  # no torch, a broken driver: the line says so and the app goes on
        line, details = "**Computing on:** unknown", "torch could not be loaded to ask for the device."
    st.sidebar.markdown(line)
    st.sidebar.caption(details)
