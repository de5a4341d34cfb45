"""The √d_k explorer's tabs and what they share; ``app_pages/scaling.py`` holds the page itself.

One module per tab (``variance`` … ``training``), beside the settings they read (``settings``) and
the caches over the core (``cached``). Imported only by the explorer, so the other pages never load it.
"""

from __future__ import annotations

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
