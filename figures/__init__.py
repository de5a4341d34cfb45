"""Figure builders: pure functions from numbers to ``plotly.graph_objects.Figure``.

They never import streamlit, so tests can call them directly.
"""

from .style import IMPL_COLORS, PLOTLY_CONFIG, SCALED, UNSCALED, base_layout, font_size

__all__ = ["IMPL_COLORS", "PLOTLY_CONFIG", "SCALED", "UNSCALED", "base_layout", "font_size"]
