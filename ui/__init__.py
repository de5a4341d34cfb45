"""The pages' shared Streamlit glue: the frame (talk mode, the device), the link's notices, drawing helpers.

Page-specific parts live in a sub-package per page (``ui/benchmark/``, ``ui/heads/``, ``ui/scaling/``).
"""
