"""The frame around every page: the sidebar with the device and the talk-mode switch.

Nothing here imports torch: importing it takes seconds on a small machine, and the home page
needs none of it. The device line is drawn from ``attention_core.device_info`` once torch is
loaded (every other page loads it for its content); on a visit that has not loaded it yet, a
background thread loads it after the page is drawn and the line fills in when it is ready.
"""

from __future__ import annotations

import sys
import threading

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from . import urlstate, viewport

_PAGE_CONFIG = {
    "page_title": "Attention, step by step",
    "page_icon": ":material/blur_on:",
    "layout": "wide",
}


def page_config() -> None:
    """``st.set_page_config`` for every page; talk mode starts with the sidebar collapsed.

    The presenter can still open it with the arrow at the top left. Called by ``app.py`` first.
    """
    urlstate.seed(urlstate.FRAME_PARAMS)
    talk = urlstate.talk_mode()
    st.set_page_config(**_PAGE_CONFIG, initial_sidebar_state="collapsed" if talk else "expanded")


class _DeviceLine:
    """The sidebar's device summary, computed once per server, off the script thread if need be."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.summary: dict[str, str] | None = None
        self.failed = False

    def compute(self) -> None:
        try:
            from attention_core import device_info

            info = device_info()
        except Exception:  # no torch, a broken driver: the line says "unknown", the app goes on
            self.failed = True
            return
        gpu = info.device.startswith("cuda")
        mem = f"{info.total_memory_bytes / 2**30:.0f} GiB" if info.total_memory_bytes else "unknown"
        self.summary = {
            "kind": "CUDA GPU" if gpu else "CPU",
            "name": info.name,
            "device": info.device,
            "torch": info.torch_version,
            "threads": str(info.threads),
            "memory": mem,
        }

    def ready(self) -> bool:
        return self.summary is not None or self.failed

    def start_in_background(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self.compute, name="device-line", daemon=False)  # see refine.py
                self._thread.start()


@st.cache_resource(show_spinner=False)
def _device_line() -> _DeviceLine:
    return _DeviceLine()


def sidebar() -> DeltaGenerator:
    """Draw the shared sidebar's top (the talk switch) and return its slot for :func:`device_line`."""
    urlstate.seed(urlstate.FRAME_PARAMS)
    with st.sidebar:
        st.toggle(
            "Talk mode",
            key=urlstate.TALK.key,
            help="Larger type and less prose, for a projector; the sidebar starts collapsed. Kept in the link.",
        )
        return st.container()


def after_page(box: DeltaGenerator) -> None:
    """What the frame draws once the page is done: the device line and the viewport probe.

    Both come last on purpose. The device line may need torch, which the home page does not load;
    the probe's first report reruns the script, and a rerun requested while the page is still
    running would interrupt it and start it over, doubling a cold visit's wait.
    """
    device_line(box)
    viewport.probe()


def device_line(box: DeltaGenerator) -> None:
    """The device summary in ``box``."""
    line = _device_line()
    if not line.ready() and "torch" in sys.modules:
        line.compute()  # the page has loaded torch already: this is instant
    with box:
        if line.ready():
            _draw(line)
        else:
            line.start_in_background()
            _pending(line)


def _draw(line: _DeviceLine) -> None:
    d = line.summary
    if d is None:
        st.markdown("**Computing on:** unknown")
        st.caption("torch could not be loaded to ask for the device.")
        return
    st.markdown(f"**Computing on:** {d['kind']}  \n{d['name']}")
    st.caption(f"torch {d['torch']} · {d['threads']} threads · {d['memory']} memory")


@st.fragment(run_every=1.0)
def _pending(line: _DeviceLine) -> None:
    """Until torch has loaded in the background: a placeholder, polled once a second."""
    if line.ready():
        st.rerun()  # the whole app: the next run draws the line without this fragment
    st.markdown("**Computing on:** …")
    st.caption("Loading torch to ask for the device.")


def talk_css() -> None:
    """In talk mode, enlarge the page's text so it reads from the back of a hall."""
    if urlstate.talk_mode():
        st.html(
            "<style>"
            "[data-testid='stMain'] [data-testid='stMarkdown'] p,"
            "[data-testid='stMain'] [data-testid='stMarkdown'] li {font-size: 1.3rem; line-height: 1.45;}"
            "[data-testid='stMetricValue'] {font-size: 2.4rem;}"
            "[data-testid='stMainBlockContainer'] {padding-top: 4rem; padding-bottom: 2rem;}"
            ".katex {font-size: 1.5em !important;}"
            "</style>"
        )
