"""The frame around every page: page config, the sidebar (talk mode, the device), link notices; ``app.py`` calls
them in order."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.navigation.page import StreamlitPage

from . import links

CHART_CODE = "_chart_code_asked"  # session flag: the browser has been sent a chart, so it has Plotly's code
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

# Narrow screens. Streamlit stacks columns only below 640 px; above that a row of controls kept every column
# however narrow, breaking labels inside words ("See / d"). Such a row now wraps, and so does a long label;
# formulas scroll sideways; titles shrink on a phone.
NARROW_CSS = (
    "<style>"
    "@media (max-width: 1100px) {"
    "[data-testid='stHorizontalBlock']:has(> [data-testid='stColumn'] [data-testid='stWidgetLabel'])"
    " {flex-wrap: wrap;}"
    "[data-testid='stHorizontalBlock'] > [data-testid='stColumn']:has([data-testid='stWidgetLabel'])"
    " {min-width: min(100%, 9.5rem);}"
    "[data-testid='stButton'] kbd {display: none;}"  # a key's hint: room for the label, and phones have no keys
    "}"
    "[data-testid='stWidgetLabel'] p {overflow-wrap: normal; word-break: normal;}"
    # A label, a button or a metric's note too long for its box wraps instead of ending in "…".
    ".stMarkdownEllipsis, .stMarkdownEllipsis p {white-space: normal !important; text-overflow: clip;}"
    ".katex-display {overflow-x: auto; overflow-y: hidden;}"
    "@media (max-width: 640px) {"
    "[data-testid='stMain'] h1 {font-size: 2rem;}"
    ".katex-display > .katex {font-size: 1em;}"
    "}"
    "</style>"
)


def talk() -> bool:
    """Whether the presenter's talk mode is on."""
    return bool(st.session_state.get(TALK, False))


def page_config() -> None:
    """``st.set_page_config`` for every page; a link in talk mode opens with the sidebar collapsed, others with
    Streamlit's "auto" (closed on a phone, where it would cover the page)."""
    links.remember()
    opened_in_talk = st.session_state.get(TALK, links.on_off(st.query_params.get(TALK, "")) == "true")
    st.set_page_config(
        page_title="Attention, step by step",
        page_icon=":material/blur_on:",
        layout="wide",
        initial_sidebar_state="collapsed" if opened_in_talk else "auto",
    )


_FIRST_RUN = threading.Lock()
_HAS_RUN: set[str] = set()  # pages run once in this process: every module they import is loaded


@contextlib.contextmanager
def first_run_alone(page: StreamlitPage) -> Iterator[None]:
    """A page's first run in this process (which imports its modules) waits until no other page's first run goes on.

    Two script threads importing overlapping modules at once made Python's import machinery fail one of them
    (``_DeadlockError``, or a numpy without ``ndarray``; found by ``benchmarks/audience.py`` with three viewers).
    """
    with contextlib.nullcontext() if page.url_path in _HAS_RUN else _FIRST_RUN:
        try:
            yield
        finally:
            _HAS_RUN.add(page.url_path)


def _ask_for_chart_code(page: StreamlitPage) -> DeltaGenerator | None:
    """On a session's first run of a page with charts (not home): a blank 10-px chart in the sidebar, emptied after.

    The browser then loads Plotly's code (4.7 MB) while the page imports torch instead of after: the explorer's
    cold start fell from 4.7 s to 3.9 s (2-core machine, median of 5).
    """
    if not page.url_path or st.session_state.get(CHART_CODE):
        return None
    import plotly.graph_objects as go

    st.session_state[CHART_CODE] = True
    blank = go.Figure(layout={"height": 10, "margin": {"l": 0, "r": 0, "t": 0, "b": 0},
                              "xaxis": {"visible": False}, "yaxis": {"visible": False}})  # fmt: skip
    slot = st.sidebar.empty()
    slot.plotly_chart(blank, config={"staticPlot": True, "displayModeBar": False})
    return slot


def sidebar(page: StreamlitPage) -> tuple[DeltaGenerator, DeltaGenerator | None]:
    """The talk-mode switch (an old ``talk=1`` link upgraded first); returns :func:`after_page`'s two slots."""
    links.upgrade(**{TALK: links.on_off})
    st.sidebar.toggle(
        "Talk mode", key=TALK, bind="query-params",
        help="Larger type and less prose, for a projector; the sidebar starts collapsed. Kept in the link.",
    )  # fmt: skip
    st.html(TALK_CSS if talk() else NARROW_CSS)
    return st.container(), _ask_for_chart_code(page)


@st.cache_resource(show_spinner=False)
def _device_line() -> tuple[str, str]:
    from attention_core.device import default_device, device_info

    info = device_info(default_device())
    mem = f"{info.total_memory_bytes / 2**30:.0f} GiB" if info.total_memory_bytes else "unknown"
    kind = "CUDA GPU" if info.device.startswith("cuda") else "CPU"
    details = f"torch {info.torch_version} · {info.threads} threads · {mem} memory"
    return f"**Computing on:** {kind}  \n{info.name}", details


def after_page(notices: DeltaGenerator, chart_code: DeltaGenerator | None) -> None:
    """Once the page is drawn: the link's notices, the link box and the device line (last, since it needs torch,
    which home does not load for itself)."""
    if chart_code is not None:
        chart_code.empty()
    links.report(notices)
    links.link_box()
    try:
        line, details = _device_line()
    except Exception:  # no torch, a broken driver: the line says so and the app goes on
        line, details = "**Computing on:** unknown", "torch could not be loaded to ask for the device."
    st.sidebar.markdown(line)
    st.sidebar.caption(details)
