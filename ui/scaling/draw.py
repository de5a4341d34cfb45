"""What every tab draws with: snapped sliders, figures built once, talk mode's fitting, prose, metrics, tables."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from figures.style import PLOTLY_CONFIG
from ui import urlstate, viewport

NUMBER = st.column_config.NumberColumn


def snap(key: str, choices: tuple[float, ...]) -> None:
    """Before a select_slider: move a value from the URL (or a stale one) to the nearest choice."""
    value = st.session_state.get(key)
    if value in choices:
        return
    try:
        target = math.log(float(value))
        st.session_state[key] = min(choices, key=lambda c: abs(math.log(c) - target))
    except (TypeError, ValueError):
        st.session_state[key] = choices[0]


@st.cache_resource(max_entries=256, show_spinner=False)
def _figure(key: tuple[Any, ...], _make: Callable[[], go.Figure]) -> go.Figure:
    return _make()


# Talk mode: how far down the window a tab's first figure starts (settings row, tabs, formula, the
# tab's own controls), measured with benchmarks/rehearsal.py. The figure takes what is left.
TALK_ABOVE_FIRST = {"Variance": 400, "Scaling strategies": 395, "Numerical stability": 370, "Training": 385}
TALK_ABOVE_DEFAULT = 335
PENDING = "_sc_pending_metrics"  # talk mode: metric rows held back until the first figure is drawn
FIT = "_sc_fit_next"  # talk mode: the next figure is the tab's first, fit it to the window


def plot(
    key: tuple[Any, ...], make: Callable[[], go.Figure], *, fit: bool = False, metrics_after: bool = True
) -> None:
    """Draw the figure ``make()`` builds, built once per ``key`` (which must name all it depends on).

    Building a plotly figure costs tens of milliseconds, most of a rerun. ``st.cache_resource``
    keeps the object itself: a figure restored from a pickle (``st.cache_data``) is validated
    again, which costs as much as building it. Figures are never changed after they are built.
    """
    first = st.session_state.pop(FIT, False)
    if first or (fit and urlstate.talk_mode()):  # talk mode: fit the figure to the window, numbers after it
        natural = _figure(key, _make=make).layout.height or 450
        above = TALK_ABOVE_FIRST.get(str(st.session_state.get("sc_tab")), TALK_ABOVE_DEFAULT)
        height = viewport.fit_height(above, natural=int(natural), low=220)
        fig = _figure((*key, "talk-fit", height), _make=lambda: make().update_layout(height=height))
        st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG)
        if metrics_after:
            flush_metrics()
        return
    st.plotly_chart(_figure(key, _make=make), width="stretch", config=PLOTLY_CONFIG)


def prose(talk: bool, *paragraphs: str) -> None:
    """Explanatory paragraphs: shown normally, skipped in talk mode (the presenter says them)."""
    if not talk:
        for p in paragraphs:
            st.markdown(p)


def fmt(x: float, digits: int = 3) -> str:
    """A number for prose: 3 significant digits, a true minus sign."""
    return f"{x:.{digits}g}".replace("-", "−")


def metrics(*items: tuple[str, str, str | None]) -> None:
    """A row of headline numbers: (label, value, a note under it or None).

    In talk mode, before a tab's first figure, the row is held back and drawn under that figure,
    so the figure fits the projector's screen (see :func:`plot`).
    """
    if st.session_state.get(FIT):
        st.session_state[PENDING] = [*st.session_state.get(PENDING, []), list(items)]
        return
    _metric_row(list(items))


def flush_metrics() -> None:
    """Draw the metric rows held back in talk mode (none otherwise)."""
    for row in st.session_state.pop(PENDING, []):
        _metric_row(row)


def _metric_row(items: list[tuple[str, str, str | None]]) -> None:
    if not items:
        return
    for col, (label, value, note) in zip(st.columns(len(items)), items, strict=True):
        col.metric(label, value, note, delta_color="off", delta_arrow="off")


def numbers(df: pd.DataFrame, columns: dict[str, Any], caption: str | None = None) -> None:
    """The numbers behind a figure, as a compact table."""
    with st.expander("The numbers", expanded=False):
        if caption:
            st.caption(caption)
        st.dataframe(df[list(columns)], hide_index=True, width="stretch", column_config=columns)
