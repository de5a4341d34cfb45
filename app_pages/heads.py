"""Heads: multi-head, grouped-query and multi-query attention, and decoding with a KV cache."""

from __future__ import annotations

from streamlit.delta_generator import DeltaGenerator

from ui import draw, links
from ui.heads.calculator import CONTEXTS, calculator_tab
from ui.heads.decode import decode_tab
from ui.heads.examples import HeadSettings
from ui.heads.gqa import gqa_tab, heads_tab
from ui.heads.split import split_tab
from ui.page import tabbed_page

TABS = {
    "Split": split_tab, "Heads side by side": heads_tab, "MHA → GQA → MQA": gqa_tab,
    "KV-cache calculator": calculator_tab, "Decode": decode_tab,
}  # fmt: skip
INTRO = (
    "Real models run many heads at once, share keys and values between them, and generate text one token at a "
    "time from a cache. Each tab computes one of these live on the walkthrough's sentence."
)


def shared_controls(box: DeltaGenerator, tab: str) -> HeadSettings:
    """d_model, query heads, seed and the causal mask above the tabs; unused on the calculator."""
    off = tab == "KV-cache calculator"
    (c,) = draw.settings([2, 2, 1, 1.3], box=box)
    return HeadSettings(
        c[0].select_slider("Model width d_model", (16, 32, 64), 32, key="hd_dm", bind="query-params", disabled=off,
                           help="The width of each token vector, and of Q, K and V before the split."),
        c[1].select_slider("Query heads h", (1, 2, 4, 8), 4, key="hd_h", bind="query-params", disabled=off,
                           help="d_model is cut into h heads of d_k = d_model / h features each."),
        c[2].number_input("Seed", 0, 9999, 0, key="hd_seed", bind="query-params", disabled=off,
                          help="Seeds the word vectors and the random projections."),
        c[3].toggle("Causal mask", key="hd_causal", bind="query-params", disabled=off or tab == "Decode",
                    help="Each token sees only itself and earlier tokens, as in a decoder."),
    )  # fmt: skip


def summary(sh: HeadSettings, tab: str) -> str:
    """The shared settings in one line, beside the folded popover in talk mode."""
    if tab == "KV-cache calculator":
        return "These settings belong to the other tabs."
    return f"d_model = {sh.d_model} · h = {sh.n_heads} heads · seed {sh.seed}" + (" · causal" if sh.causal else "")


in_k = {str(t): label for label, t in CONTEXTS.items()}  # old links wrote contexts in tokens, today's as shown
links.upgrade(hd_causal=links.on_off, hd_weights=links.on_off, hd_ctx=in_k, hd_tmax=in_k)
tabbed_page(TABS, key="hd_tab", title="Heads, shared keys and the KV cache", intro=INTRO, settings=shared_controls,
            summary=summary)  # fmt: skip
