"""Watch it learn: an induction head forms in a two-layer, attention-only decoder, live, in seconds."""

from __future__ import annotations

from ui.induction.ablate import ablate_tab
from ui.induction.sequence import sequence_tab
from ui.induction.train import train_tab
from ui.page import tabbed_page

TABS = {"Train": train_tab, "Ablate a head": ablate_tab, "Your sequence": sequence_tab}
INTRO = (
    "A decoder that is nothing but attention, two layers of four heads, reads random tokens followed by the "
    "same tokens again. The first half cannot be predicted; the repeat can, by a two-step algorithm: "
    "**look back for the current token, take the token that followed it, copy it**. A layer-0 head (sometimes "
    "two, sharing the job) learns to look at the previous token; a layer-1 head composes with it into an "
    "**induction head** "
    "(Elhage et al. 2021; Olsson et al. 2022). The repeated half's loss falls suddenly when it forms: a "
    "**phase change**. The page opens on a model trained by this project's own code; press **Train** to watch "
    "it happen again from scratch."
)

tabbed_page(TABS, key="in_tab", title="Watch it learn: an induction head forms", intro=INTRO)
