"""Streamlit glue shared by the pages: URL state, talk mode and the sidebar frame.

``ui.params`` is pure (no streamlit import) so its parsing rules are unit-tested directly.
"""
