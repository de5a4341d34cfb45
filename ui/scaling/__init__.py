"""The √d_k explorer's tabs, one module each, beside the settings they read (``settings``) and the caches over the
core (``cached``). Imported only by the explorer, so the other pages never load it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from ui import draw
from ui.frame import talk


def headline() -> Callable[[], DeltaGenerator]:
    """Where a tab's headline goes: here, above the figures drawn next, or in talk mode under them (the box is made
    when asked for), so the figures fit the window."""
    box = None if talk() else st.container()
    return lambda: box if box is not None else st.container()


def lead(
    figs: go.Figure | Sequence[go.Figure], key: str | Sequence[str], fit: str, *numbers: tuple[str, str, str | None],
    title: str | None = None, verdict: str | None = None,
) -> None:
    """A tab's first figure, or its panels side by side (:func:`ui.draw.panels`), and its headline (:func:`headline`):
    the ``verdict`` sentence if any, then the numbers; ``title`` in bold right above the figure (a phone wraps it)."""
    above = headline()
    if title:
        st.markdown(f"**{title}**")
    if isinstance(figs, go.Figure):
        draw.chart(figs, str(key), fit=fit)
    else:
        draw.panels(figs, list(key), fit)
    with above():
        if verdict:
            st.markdown(verdict)
        draw.metrics(*numbers)


def both(column: str, label: str, fmt: str, scaled_fmt: str | None = None) -> dict[str, Any]:
    """The numbers table's two columns of one quantity, without and with ÷√d_k (``<column>_unscaled``, ``_scaled``)."""
    return {f"{column}_unscaled": draw.NUMBER(f"{label} (q·k)", format=fmt),
            f"{column}_scaled": draw.NUMBER(f"{label} (÷√d_k)", format=scaled_fmt or fmt)}  # fmt: skip
