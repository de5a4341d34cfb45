"""The decoder page's parts: the model (once per server), its cached readings, the prompt, one module per tab."""
