"""The benchmark page's parts: its ranges, controls, cached wrappers, the run, and what it shows."""
