"""Figure builders: pure functions from numbers to ``plotly.graph_objects.Figure``, without streamlit."""
