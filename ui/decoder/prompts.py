"""The page's example prompts, one of them longer than the sliding window (512 tokens)."""

from __future__ import annotations

# A diary long enough that a local layer's window no longer reaches its first line: the code sits in that first
# line, and the question comes at the end. Only the global layers (and the window switched off) can still see it.
_WEATHER = ("grey and still", "bright, with a cold wind from the north", "wet from dawn to dusk",
            "foggy until noon", "calm and warm", "stormy after dark", "clear, with a thin moon at night")  # fmt: skip
_CHORES = ("painted the railing by the stairs", "mended a net for the harbour master", "cleaned every pane of the lamp",
           "carried wood up from the beach", "wrote letters to my sister", "oiled the clockwork of the light",
           "swept the gallery and fed the cat")  # fmt: skip
_SIGHTS = ("a fishing boat came in late", "seals lay on the flat rocks", "the supply ship did not come",
           "gulls fought over a crab", "a stranger walked along the cliff", "the fog bell rang twice",
           "a heron stood in the shallows")  # fmt: skip
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _diary(days: int) -> str:
    lines = []
    for d in range(days):
        lines.append(
            f"{_DAYS[d % 7]}. The weather was {_WEATHER[(3 * d) % 7]}. In the morning I {_CHORES[(2 * d + 1) % 7]}, "
            f"and in the afternoon {_SIGHTS[(5 * d + 2) % 7]}. The lamp was lit at sunset, as always."
        )
    return "\n".join(lines)


LONG = (
    "The code of the lighthouse safe is 4718. I write it here so that I do not forget it.\n\n"
    + _diary(13)
    + "\n\nAt the end of the month the inspector asked me for the code of the safe. I told him the code is"
)
OWN = "Your own prompt"
EXAMPLES = {  # by the names the link writes
    "Capital": "The capital of France is",
    "Story": "Alice met Bob at the old station. Later that evening, Alice gave the map to",
    "Code": "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "Counting": "one, two, three, four, five, six,",
    "Long diary (over 512 tokens)": LONG,
    OWN: "",
}
LONG_NAME = "Long diary (over 512 tokens)"
