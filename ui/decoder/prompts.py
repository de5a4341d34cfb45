"""The page's example prompts, one of them longer than the sliding window (512 tokens)."""

from __future__ import annotations

from attention_core.decoder.texts import LONG_TEXT as LONG

OWN = "Your own prompt"
LONG_NAME = "Long diary (over 512 tokens)"
EXAMPLES = {  # by the names the link writes
    "Capital": "The capital of France is",
    "Story": "Alice met Bob at the old station. Later that evening, Alice gave the map to",
    "Code": "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "Counting": "one, two, three, four, five, six,",
    LONG_NAME: LONG,
    OWN: "",
}
