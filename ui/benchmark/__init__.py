"""The benchmark page's parts: its URL parameters, controls, cached wrappers, the run, and what it shows."""
