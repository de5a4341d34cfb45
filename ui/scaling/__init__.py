"""The √d_k explorer's tabs and what they share; ``app_pages/scaling.py`` holds the page itself.

One module per tab (``variance`` … ``training``), beside the settings they read (``settings``) and
the caches over the core (``cached``). Imported only by the explorer, so the other pages never load it.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from ui import draw
from ui.frame import talk


def lead(fig: go.Figure, key: str, fit: str, *numbers: tuple[str, str, str | None]) -> None:
    """A tab's first figure and its headline numbers: above it, or in talk mode under it, so it fits the window."""
    if not talk():
        draw.metrics(*numbers)
    draw.chart(fig, key, fit=fit)
    if talk():
        draw.metrics(*numbers)


def both(column: str, label: str, fmt: str, scaled_fmt: str | None = None) -> dict[str, Any]:
    """The numbers table's two columns of one quantity, without and with ÷√d_k (``<column>_unscaled``, ``_scaled``)."""
    return {f"{column}_unscaled": draw.NUMBER(f"{label} (q·k)", format=fmt),
            f"{column}_scaled": draw.NUMBER(f"{label} (÷√d_k)", format=scaled_fmt or fmt)}  # fmt: skip
