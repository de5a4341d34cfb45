"""The heads page's parts: one module per tab, the cached computations and the drawing helpers they share."""
