"""Helpers every heads tab uses (as on the √d_k explorer): drawing a figure, prose, snapping, numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from figures.style import PLOTLY_CONFIG
from ui import urlstate, viewport

N_TOKENS = 11  # the sentence preset


@st.cache_resource(max_entries=256, show_spinner=False)
def _figure(key: tuple[Any, ...], _make: Callable[[], go.Figure]) -> go.Figure:
    return _make()


# px above each tab's first figure in talk mode (settings row, tab bar, formula, the tab's own controls),
# read off screenshots at 1280×720; benchmarks/rehearsal.py flags a figure that no longer fits.
TALK_ABOVE = {"Split": 250, "Heads side by side": 330, "Decode": 370}
TALK_ABOVE_DEFAULT = 330


def plot(cache_key: tuple[Any, ...], make: Callable[[], go.Figure], chart_key: str) -> None:
    """Draw ``make()``, built once per ``cache_key`` (which names everything the figure depends on).

    In talk mode the figure is no taller than the window leaves, so it fits a projector without scrolling.
    """
    if urlstate.talk_mode():
        natural = int(_figure(cache_key, _make=make).layout.height or 450)
        above = TALK_ABOVE.get(str(st.session_state.get("hd_tab")), TALK_ABOVE_DEFAULT)
        height = viewport.fit_height(above, natural=natural, low=220)
        fig = _figure((*cache_key, "talk-fit", height), _make=lambda: make().update_layout(height=height))
    else:
        fig = _figure(cache_key, _make=make)
    st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key=chart_key)


def prose(talk: bool, *paragraphs: str) -> None:
    if not talk:
        for p in paragraphs:
            st.markdown(p)


def snap(key: str, choices: tuple[int, ...]) -> None:
    """Before a select_slider: move a URL value (or a stale one) to the nearest choice on a log scale."""
    value = st.session_state.get(key)
    if value in choices:
        return
    try:
        target = math.log(max(float(value), 1e-9))
        st.session_state[key] = min(choices, key=lambda c: abs(math.log(c) - target))
    except (TypeError, ValueError):
        st.session_state[key] = choices[0]


def divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def fmt_int(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def fmt_tokens(n: int) -> str:
    """A token count for a metric: 487 819 → "488k", 2 400 000 → "2.4M"."""
    if n >= 10**6:
        return f"{n / 10**6:.1f}M"
    if n >= 10**4:
        return f"{n / 1000:.0f}k"
    return fmt_int(n)
