"""The walkthrough page's parts: its cached result and figures (:mod:`.data`), and the views (:mod:`.views`)."""
