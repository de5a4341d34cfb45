"""The walkthrough page's parts: its cached result (:mod:`.data`), the figures built from it (:mod:`.figures`) and
the views that show them (:mod:`.views`)."""
