"""Sparse patterns: what a window, global tokens, dilation or BigBird let attention skip, at token and tile level."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from attention_core.efficient.patterns import EMPTY, FLEX_BLOCK, PARTIAL, BlockSummary, block_summary, dense_mask
from attention_core.efficient.variants import variant_pattern
from figures.efficient import tiles_figure, tokens_figure
from ui import draw
from ui.frame import talk

PATTERNS = {"window": "Window", "window+globals": "Window + globals", "dilated": "Dilated", "bigbird": "BigBird"}
ABOUT = {
    "window": "Longformer's local band: token i sees the tokens at most w away. The work grows as n·w, not n².",
    "window+globals": "The band, plus a few global tokens (such as [CLS]) that see every token and are seen by all.",
    "dilated": "w keys on each side, d tokens apart: the reach is w·d for the cost of w (Longformer's upper layers).",
    "bigbird": "BigBird works in blocks: a band of blocks, global blocks and a few random blocks per query block. "
    "The window and the global tokens are rounded up to whole blocks.",
}
ZOOM = 512  # tokens drawn one by one: four 128-token tiles a side
N_MAX = 8192  # the tile summary reads every (query, key) pair once: ~2 s at 8192 on a 2-core CPU


def route_params(variant: str, window: int, n_global: int, dilation: int, n_random: int, block: int,
                 features: int = 0, rank: int = 0) -> dict[str, int]:  # fmt: skip
    """The core's parameters for a route from a tab's controls; BigBird counts its window and globals in blocks
    (rounded up)."""
    if variant == "bigbird":
        return {"window": -(-window // block), "n_global": -(-n_global // block), "n_random": n_random, "block": block}
    own = {"linear": {}, "performer": {"features": features}, "linformer": {"rank": rank}}
    return own.get(variant, {"window": window, "n_global": n_global, "dilation": dilation})


@dataclass(frozen=True)
class PatternReading:
    """The first tokens' dense mask ``(zoom, zoom)`` and the whole pattern's tiles."""

    allowed: np.ndarray
    tiles: BlockSummary


@st.cache_data(max_entries=64, show_spinner="Reading the pattern tile by tile…")
def pattern_data(variant: str, causal: bool, n: int, *params: int) -> PatternReading:
    mod = variant_pattern(variant, n=n, is_causal=causal, device="cpu", **route_params(variant, *params))
    zoom = min(n, ZOOM)
    return PatternReading(dense_mask(mod, zoom, zoom, device="cpu").numpy(), block_summary(mod, n, n, device="cpu"))


def _figure(is_talk: bool, panel: int, *key: Any) -> Any:
    d = pattern_data(*key)
    if panel == 0:
        return tokens_figure(d.allowed, FLEX_BLOCK, talk=is_talk)
    return tiles_figure(d.tiles.states.numpy(), key[2], FLEX_BLOCK, talk=is_talk)


def patterns_tab() -> None:
    (c,) = draw.settings([1.3, 1, 1.4, 1.4, 1.1, 1.1, 1.1])
    kw = {"bind": "query-params"}
    variant = c[0].selectbox("Pattern", tuple(PATTERNS), format_func=PATTERNS.__getitem__, key="ef_pat", **kw)
    bigbird, rest = variant == "bigbird", iter(c[4:])  # each pattern's own knobs, drawn only for it
    key = (
        variant,
        c[1].toggle("Causal", key="ef_causal", **kw),
        c[2].slider("Tokens n", 128, N_MAX, 4096, step=128, key="ef_n", **kw),
        c[3].slider("Window w", 1, 1024, 256, key="ef_win", help="Tokens each side a query sees.", **kw),
        next(rest).slider("Global tokens", 0, 256, 16, key="ef_glob", help="The first tokens, which see and are "
                          "seen by every token.", **kw) if variant in ("window+globals", "bigbird") else 0,
        next(rest).slider("Dilation d", 1, 16, 4, key="ef_dil", **kw) if variant == "dilated" else 1,
        next(rest).slider("Random", 0, 8, 2, key="ef_rand", help="Random blocks per query block.", **kw)
        if bigbird else 0,
        next(rest).select_slider("Block", (16, 32, 64, 128, 256, 512), 64, key="ef_block", help="BigBird's block: "
                                 "it must divide n (a multiple of 128).", **kw) if bigbird else 64,
    )  # fmt: skip
    draw.prose(f"**{PATTERNS[variant]}.** {ABOUT[variant]} A block-sparse kernel such as FlexAttention works in "
               f"{FLEX_BLOCK}×{FLEX_BLOCK} tiles: it skips a tile no pair of which may attend, computes a full one "
               "without a mask, and masks the rest.")  # fmt: skip
    tiles = pattern_data(*key).tiles
    draw.panels([draw.figure(_figure, talk(), p, *key) for p in (0, 1)], ["ef_pattern0", "ef_pattern1"],
                fit="efficient.Sparse patterns")
    draw.metrics(
        ("Work skipped", f"{tiles.share(EMPTY):.0%}", "of the n² scores: tiles never computed"),
        ("Pairs allowed", f"{tiles.allowed_share:.1%}", "what a perfect kernel would compute"),
        ("Tiles masked", f"{tiles.share(PARTIAL):.0%}", "computed, then masked"),
    )
