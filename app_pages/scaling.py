"""The √d_k explorer: every claim about the scaling measured live beside its theory; the tabs are in ``ui/scaling/``."""

from __future__ import annotations

from streamlit.delta_generator import DeltaGenerator

from ui import draw, links
from ui.frame import talk
from ui.page import tabbed_page
from ui.scaling.gradients import gradients_tab
from ui.scaling.initialisation import init_tab
from ui.scaling.saturation import saturation_tab
from ui.scaling.settings import DIMS, Shared
from ui.scaling.stability import stability_tab
from ui.scaling.strategies import strategies_tab
from ui.scaling.training import training_tab
from ui.scaling.variance import variance_tab

TABS = {
    "Variance": variance_tab,
    "Saturation": saturation_tab,
    "Gradients": gradients_tab,
    "Scaling strategies": strategies_tab,
    "Initialisation": init_tab,
    "Numerical stability": stability_tab,
    "Training": training_tab,
}
INTRO = (
    "Why attention divides its scores by √d_k, measured live: each tab samples random vectors, computes what the "
    "claim predicts, and shows both."
)
# Which tabs read the shared controls (the others disable them, so it is clear they do nothing there).
USES_DK = USES_SEED = set(TABS) - {"Numerical stability"}
USES_KEYS = {"Saturation", "Gradients", "Scaling strategies", "Training"}
# Older links named these choices by a code.
OLD_OPTIMIZERS = {"adam": "Adam", "sgd": "SGD"}
OLD_INITS = {"lecun": "1/√d_model", "xavier": "Xavier"}


def short_number(old: str) -> str | None:
    """Older links wrote a float choice in full ("1.0"); its label, and so today's link, is shorter ("1")."""
    try:
        return f"{float(old):g}"
    except ValueError:
        return None


def shared_controls(box: DeltaGenerator, tab: str) -> Shared:
    """d_k, keys and seed above the tabs; disabled where the open tab does not use them."""
    (c,) = draw.settings([3, 2, 1], box=box)
    return Shared(
        c[0].select_slider("Key width d_k", DIMS, 512, key="sc_dk", bind="query-params", disabled=tab not in USES_DK,
                           help="The length of each query and key vector."),
        c[1].select_slider("Keys per query n", (2, 4, 8, 16, 32, 64, 128), 16, key="sc_nk", bind="query-params",
                           disabled=tab not in USES_KEYS, help="How many keys each softmax row spreads its weight "
                           "over."),
        c[2].number_input("Seed", 0, 9999, 0, 1, key="sc_seed", bind="query-params", disabled=tab not in USES_SEED,
                          help="Same seed, same random numbers."),
        talk(),
    )  # fmt: skip


def summary(sh: Shared, tab: str) -> str:
    """The shared settings in one line, beside the folded popover in talk mode."""
    if tab not in USES_DK:
        return "These settings belong to the other tabs."
    keys = f" · n = {sh.n_keys} keys" if tab in USES_KEYS else ""
    return f"d_k = {sh.d_k}{keys} · seed {sh.seed}"


links.upgrade(sc_ln=links.on_off, sc_opt=OLD_OPTIMIZERS, sc_init=OLD_INITS, sc_tau=short_number, sc_lr=short_number)
tabbed_page(TABS, key="sc_tab", title="The √d_k explorer", intro=INTRO, settings=shared_controls, summary=summary)
