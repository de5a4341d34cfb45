"""The walkthrough page's data path: its cached trace (:mod:`.data`) and the figures built from it (:mod:`.figures`)."""
