"""A text to run the decoder on, written for this project.

``LONG_TEXT`` (627 tokens with ``<bos>``) is longer than the local layers' 512-token window: a diary whose first
line holds a code that its last line asks for, so only the global layers (and the model with its window switched
off) can still see it. The decoder page offers it as an example; the tests compare it with the reference for the
same reason.
"""

_WEATHER = ("grey and still", "bright, with a cold wind from the north", "wet from dawn to dusk",
            "foggy until noon", "calm and warm", "stormy after dark", "clear, with a thin moon at night")  # fmt: skip
_CHORES = ("painted the railing by the stairs", "mended a net for the harbour master", "cleaned every pane of the lamp",
           "carried wood up from the beach", "wrote letters to my sister", "oiled the clockwork of the light",
           "swept the gallery and fed the cat")  # fmt: skip
_SIGHTS = ("a fishing boat came in late", "seals lay on the flat rocks", "the supply ship did not come",
           "gulls fought over a crab", "a stranger walked along the cliff", "the fog bell rang twice",
           "a heron stood in the shallows")  # fmt: skip
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


LONG_TEXT = (
    "The code of the lighthouse safe is 4718. I write it here so that I do not forget it.\n\n"
    + "\n".join(f"{_DAYS[d % 7]}. The weather was {_WEATHER[(3 * d) % 7]}. In the morning I "
                f"{_CHORES[(2 * d + 1) % 7]}, and in the afternoon {_SIGHTS[(5 * d + 2) % 7]}. The lamp was lit at "
                "sunset, as always." for d in range(13))
    + "\n\nAt the end of the month the inspector asked me for the code of the safe. I told him the code is"
)
