"""The "Watch it learn" page: its runs and cached readings, and one module per tab."""
