"""Figure builders: pure functions from numbers to ``plotly.graph_objects.Figure``.

They never import streamlit, so tests can call them directly.
"""
