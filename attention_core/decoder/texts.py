"""Texts to run the decoder on, written for this project.

``LONG_TEXT`` (588 tokens with ``<bos>``) is longer than the local layers' 512-token window, so a run on it
shows the window's band on local layers and the full triangle on global ones; the tests compare it with
the reference for the same reason.
"""

LONG_TEXT = (
    "The lighthouse keeper kept a notebook in which every ship that passed the point was written down with "
    "its name, its flag, the hour and the state of the sea. In the spring of 1911 the entries grow longer. A "
    "schooner called the Marguerite passed on the third of April at 06:40, heading north, low in the water, "
    "and the keeper noted that her mainsail had been patched with a square of darker canvas. Two days later "
    "the same schooner came back south, riding high, and this time the patch was gone. He wrote a question "
    "mark in the margin and nothing else."
    "\n\n"
    "Readers of the notebook have argued about that question mark for years. Some say the keeper suspected "
    "smuggling, since an empty hull returning so quickly suggests a cargo unloaded somewhere close, perhaps "
    "in one of the coves below the cliffs where the road never reached. Others point out that sailors replace"
    " sails all the time and that a patch tells us very little. The keeper himself never returned to the "
    "matter; the following pages are about fog, a broken lens, a visit from the inspector and the price of "
    "lamp oil, which rose from 14 to 19 pence a gallon over the summer."
    "\n\n"
    "What makes the notebook valuable is not any single entry but the pattern across thousands of them. "
    "Because the keeper wrote the same fields in the same order every day, a reader can count how many ships "
    "passed in each month, how often the wind came from the west, and how the traffic changed when the new "
    "harbour opened further up the coast in 1913. The numbers fall by almost half within a year. Fishing "
    "boats still came, but the large traders stopped rounding the point, and the keeper's entries become "
    'shorter, sometimes only a date and the word "calm".'
    "\n\n"
    "In the last pages the handwriting changes. A second person, probably his daughter, takes over the "
    "entries in the winter of 1915, and she writes more about the weather than about ships: the colour of the"
    " sky before a storm, the sound of ice in the gutters, a flock of geese that circled the tower twice "
    "before turning inland. She also copies out, on a loose sheet tucked into the back cover, a list of every"
    " vessel her father had marked with a question mark. There are eleven of them, and the Marguerite is the "
    "first."
    "\n\n"
    "Nobody knows why she made the list. She may have meant to ask someone about those ships, or she may "
    "simply have wanted to keep her father's doubts in one place. The sheet ends with a line that is hard to "
    'read because the ink has run: something like "ask at the customs house, Tuesday". Whether she ever went '
    "is not recorded, and the notebook stops a few weeks later, in the middle of a page, after an entry that "
    'reads only: "Wind south-west, rain, no ships."'
)
