"""The browser's viewport size in Python, so a figure can size itself to the screen it is shown on.

Streamlit 1.67 tells Python nothing about the window (``st.context`` has headers, cookies, locale,
theme, url, but no size). In talk mode a tiny ``st.components.v2`` component reports
``window.innerWidth``, ``window.innerHeight`` and the width of the main column, once on load and
again after a resize or when the sidebar opens or closes. Until it has reported (the first run of
a session, or AppTest), :func:`viewport` returns a conservative guess: the smallest screen talk
mode is designed for, 1280×720, so a figure fits before the first report as well as after it.

Outside talk mode nothing is mounted and :func:`viewport` returns :data:`NORMAL_GUESS`, a 1280-wide
laptop with the sidebar open: every report reruns the script, and a rerun interrupts whatever the
page is doing (a benchmark run, for one), which only talk mode's fitting is worth.

Call :func:`probe` once per run, after the page (``app.py`` does, through the frame); pages then read
:func:`viewport` and pass heights to the figure builders through :func:`fit_height`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from . import urlstate

KEY = "_viewport"

# A report changes the state only when the size really changed (a resize settles first), so a
# report costs at most one rerun per load and one per resize.
_JS = """
export default function(component) {
    const { setStateValue, data } = component;
    const main = () => document.querySelector("[data-testid='stMainBlockContainer']");
    const measure = () => {
        const m = main();
        let inner = 0;
        if (m) {
            const s = getComputedStyle(m);
            inner = Math.round(m.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight));
        }
        return {w: window.innerWidth, h: window.innerHeight, main: inner};
    };
    let last = data && data.w ? data : null;
    const send = () => {
        const now = measure();
        // A scrollbar coming or going moves the main column by ~15 px: not worth a rerun. The
        // sidebar opening or closing moves it by hundreds.
        if (last && now.w === last.w && now.h === last.h && Math.abs(now.main - last.main) < 40) return;
        last = now;
        setStateValue("size", now);
    };
    let timer = null;
    const later = () => { clearTimeout(timer); timer = setTimeout(send, 250); };
    // The first report waits a moment, so that the run that drew this has finished when it lands.
    timer = setTimeout(send, 100);
    window.addEventListener("resize", later);
    const m = main();
    const observer = m ? new ResizeObserver(later) : null;
    if (observer) observer.observe(m);
    return () => {
        clearTimeout(timer);
        window.removeEventListener("resize", later);
        if (observer) observer.disconnect();
    };
}
"""

_component = None


@dataclass(frozen=True)
class Viewport:
    """CSS pixels: the window's inner size and the width the main column gives its content."""

    width: int
    height: int
    main_width: int
    measured: bool  # False: a guess, the browser has not reported yet

    @property
    def talk_screen(self) -> str:
        return f"{self.width}×{self.height}"


# The smallest screen talk mode is designed for (a common projector mode; a 1920×1080 laptop at
# 150% zoom). Its main column, with the sidebar collapsed, is about 1180 px wide.
GUESS = Viewport(width=1280, height=720, main_width=1180, measured=False)
# Outside talk mode: a 1280×800 laptop with the sidebar open (its main column is about 820 px).
NORMAL_GUESS = Viewport(width=1280, height=800, main_width=820, measured=False)
MIN_HEIGHT = 360  # below this a figure is not worth fitting: it scrolls instead


def probe() -> None:
    """In talk mode, mount the reporting component (invisible). Call once per run, after the page."""
    global _component
    if not urlstate.talk_mode():
        return
    if _component is None:
        _component = st.components.v2.component("attention_viewport_probe", js=_JS)
    st.html("<style>.st-key-_viewport{display:none}</style>")
    last = st.session_state.get(KEY)
    size = last.get("size") if isinstance(last, dict) else None
    _component(key=KEY, data=size, on_size_change=lambda: None)


def viewport() -> Viewport:
    """In talk mode, the last size the browser reported, or :data:`GUESS` before the first report;
    outside it, :data:`NORMAL_GUESS`."""
    if not urlstate.talk_mode():
        return NORMAL_GUESS
    state = st.session_state.get(KEY)
    size = state.get("size") if state is not None and hasattr(state, "get") else None
    try:
        w, h, main = int(size["w"]), int(size["h"]), int(size.get("main") or 0)
    except (TypeError, KeyError, ValueError):
        return GUESS
    if not (200 <= w <= 20_000 and 200 <= h <= 20_000):
        return GUESS
    main = main if 100 <= main <= w else max(100, w - 100)
    return Viewport(width=w, height=h, main_width=main, measured=True)


def fit_height(above_px: int, *, natural: int, low: int = 260, below_px: int = 16) -> int:
    """A figure's height: its natural height, but no taller than the viewport leaves below ``above_px``.

    ``above_px`` is how far down the page the figure starts (the page knows what it drew above it);
    ``natural`` is the height the figure would like (e.g. from its number of rows). Never below
    ``low``, so a tiny window scrolls rather than squashing the figure to nothing.
    """
    room = viewport().height - above_px - below_px
    return int(max(low, min(natural, room)))


def fit_figure(fig: Any, above_px: int, *, low: int = 260) -> Any:
    """``fig`` with its height fitted to the window (:func:`fit_height`, its own height as the natural one).

    For a figure that is built fresh on each run; a cached figure must be copied first.
    """
    natural = int(fig.layout.height or 450)
    return fig.update_layout(height=fit_height(above_px, natural=natural, low=low))
