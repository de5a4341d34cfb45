"""The √d_k explorer's tabs and what they share; ``pages/scaling.py`` holds the page itself.

One module per tab (``variance`` … ``training``), beside the settings they read (``settings``),
the thin caches over the core (``cached``), the variance tab's background refinement
(``refine``), the store of finished training runs (``toy_runs``) and the drawing helpers every
tab uses (``draw``). Imported only by the explorer, so the other pages never load it.
"""
