"""The walkthrough page's parts: its cached result and the figures built from it (:mod:`.data`), and the views
that show them (:mod:`.views`)."""
