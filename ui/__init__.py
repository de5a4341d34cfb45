"""The pages' shared Streamlit glue; page-specific parts live in a sub-package per page (``ui/benchmark/``, …)."""
