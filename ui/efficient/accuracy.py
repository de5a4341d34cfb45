"""Accuracy: one route against exact softmax attention, on random inputs or on the trained model's own Q, K, V
for a sentence (one layer's softmax swapped for the route): output error, per-row KL, and "it" → "animal"."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import streamlit as st
import torch

from attention_core.efficient.accuracy import Accuracy, random_qkv
from attention_core.efficient.variants import PATTERNS, compare_variant
from attention_core.presets import MODEL_HEAD, MODEL_LAYER, MODEL_TEXT
from figures.efficient import weights_figure
from ui import draw
from ui.efficient.patterns import PATTERNS as PATTERN_NAMES
from ui.efficient.patterns import route_params
from ui.frame import talk

if TYPE_CHECKING:  # the model's modules load when a model reading is first made
    from attention_core.efficient.real import AttendsMost

NAMES = PATTERN_NAMES | {"linear": "Linear (elu + 1)", "performer": "Performer", "linformer": "Linformer"}
INPUTS = {"model": "Trained model", "random": "Random"}
HEADS = 12  # random inputs get as many heads as each of the model's layers, so one head slider serves both


@dataclass(frozen=True)
class RouteReading:
    """A route against exact attention: every head's exact weights and the route's ``(H, L, L)`` (``None``
    where it has none) and their :class:`Accuracy`; on the model, whether "it" still attends most to "animal"."""

    tokens: list[str]
    exact: np.ndarray
    weights: np.ndarray | None
    accuracy: Accuracy
    it: AttendsMost | None = None


def _plain(w: torch.Tensor | None) -> np.ndarray | None:
    """A batch of one's weights ``(1, H, L, S)`` as numpy ``(H, L, S)``; ``None`` stays ``None``."""
    return None if w is None else w[0].detach().float().cpu().numpy()


@st.cache_data(max_entries=64, show_spinner=False)
def model_data(text: str, layer: int, variant: str, params: tuple[tuple[str, int], ...]) -> RouteReading:
    """The model's layer ``layer`` on ``text`` with ``variant`` in place of softmax, against the exact layer."""
    from attention_core.efficient.real import swap_layer
    from ui.model import encoder

    s = swap_layer(encoder(), text, layer, variant, **dict(params))
    # Two words: never [CLS], [SEP] or the same position.
    it = s.attends_most("it", "animal") if {"it", "animal"} <= set(s.tokens) else None
    return RouteReading(list(s.tokens), _plain(s.exact.weights), _plain(s.swapped.weights), s.accuracy, it)


@st.cache_data(max_entries=16, show_spinner=False)  # ≤ 6 MiB each (12 heads of 256², twice): fits on Cloud
def random_data(n: int, seed: int, variant: str, causal: bool, params: tuple[tuple[str, int], ...]) -> RouteReading:
    """``variant`` against exact attention on random ``(1, 12, n, 64)`` inputs."""
    q, k, v = random_qkv(n, 64, heads=HEADS, seed=seed, device="cpu")
    result, exact, acc = compare_variant(q, k, v, variant, is_causal=causal, **dict(params))
    return RouteReading([str(i) for i in range(n)], _plain(exact.weights), _plain(result.weights), acc)


def _figure(is_talk: bool, panel: int, head: int, name: str, source: str, *key: Any) -> Any:
    """Panel 0: the exact weights; panel 1: the route's (the colour bar on the last panel with weights)."""
    d = model_data(*key) if source == "model" else random_data(*key)
    if panel == 0:
        return weights_figure(d.exact[head], d.tokens, "Exact softmax", scale=d.weights is None, talk=is_talk)
    w = None if d.weights is None else d.weights[head]
    return weights_figure(w, d.tokens, f"{name}: output error {d.accuracy.relative_error:.0%}", d.accuracy.note,
                          talk=is_talk)  # fmt: skip


def accuracy_tab() -> None:
    a, b = draw.settings([1.9, 1.4, 1, 1, 1, 1], [3, 1, 1, 1])
    kw = {"bind": "query-params"}
    source = a[0].segmented_control("Input", tuple(INPUTS), format_func=INPUTS.__getitem__, default="model",
                                    key="ef_in", required=True, **kw)  # fmt: skip
    variant = a[1].selectbox("Route", tuple(NAMES), format_func=NAMES.__getitem__, key="ef_var", **kw)
    rest, on_model = iter(a[2:]), source == "model"  # the route's own knobs, drawn only for it
    params = route_params(
        variant,
        next(rest).slider("Window w", 1, 32, 3, key="ef_awin", help="Tokens each side.", **kw)
        if variant in PATTERNS else 1,
        next(rest).slider("Global tokens", 0, 8, 1, key="ef_aglob", **kw)
        if variant in ("window+globals", "bigbird") else 0,
        next(rest).slider("Dilation d", 1, 8, 2, key="ef_adil", **kw) if variant == "dilated" else 1,
        next(rest).slider("Random blocks", 0, 4, 1, key="ef_arand", **kw) if variant == "bigbird" else 0,
        next(rest).select_slider("Block", (1, 2, 4, 8, 16), 2, key="ef_ablock", **kw) if variant == "bigbird" else 1,
        next(rest).select_slider("Features m", tuple(2**p for p in range(2, 11)), 64, key="ef_feat", **kw)
        if variant == "performer" else 1,
        next(rest).slider("Rank k", 1, 64, 8, key="ef_rank", help="At most the number of tokens.", **kw)
        if variant == "linformer" else 1,
    )  # fmt: skip
    if on_model:
        text = b[0].text_input("Sentence", MODEL_TEXT, max_chars=500, key="ef_text", **kw)
        layer = b[1].slider("Layer", 0, 5, MODEL_LAYER, key="ef_layer", **kw)
    else:
        n = b[0].select_slider("Tokens n", (32, 64, 128, 256), 64, key="ef_an", **kw)
        seed = b[1].number_input("Seed", 0, 9999, 0, key="ef_seed", **kw)
        causal = b[3].toggle("Causal", key="ef_acausal", **kw) if variant != "linformer" else False  # no causal form
    head = b[2].slider("Head", 0, HEADS - 1, MODEL_HEAD, key="ef_head", **kw)
    frozen = tuple(sorted(params.items()))
    key = (text, layer, variant, frozen) if on_model else (n, seed, variant, causal, frozen)
    d = model_data(*key) if on_model else random_data(*key)
    draw.panels([draw.figure(_figure, talk(), p, head, NAMES[variant], source, *key) for p in (0, 1)],
                ["ef_weights0", "ef_weights1"], fit="efficient.Accuracy")  # fmt: skip
    show_numbers(d, variant, layer if on_model else None)


def show_numbers(d: RouteReading, variant: str, layer: int | None) -> None:
    """The output error, the KL in the direction that is finite, and the "it" → "animal" check."""
    acc = d.accuracy
    items = [("Output error", f"{acc.relative_error:.1%}", "‖O − O_exact‖ / ‖O_exact‖")]
    if d.weights is None:
        items.append(("Per-row KL", "—", "no weights to compare (see the figure)"))
    elif variant in PATTERNS:  # KL(exact ‖ pattern) is ∞ wherever the pattern drops a weighted key
        items.append(("Exact weight kept", f"{acc.kept:.0%}", "on the keys the pattern allows"))
        items.append(("KL(route ‖ exact)", f"{float(acc.reverse_kl.mean()):.3f} nats", "−log(weight kept), row mean"))
    else:
        kl = float(acc.kl.mean())
        items.append(("KL(exact ‖ route)", "∞" if not math.isfinite(kl) else f"{kl:.3f} nats", "row mean"))
    if (it := d.it) is not None:
        kept = "—" if d.weights is None else it.variant_heads
        items.append(("“it” looks most at “animal”", f"{it.exact_heads} → {kept} of {HEADS} heads",
                      f"exact → route; {abs(it.query - it.key)} tokens apart"))  # fmt: skip
    draw.metrics(*items)
    where = (f"The model's own Q, K and V of layer {layer}, every head, go through the route in place of its "
             "softmax; the later layers are not rerun." if layer is not None else f"Random inputs: n = "
             f"{len(d.tokens)}, d = 64, {HEADS} heads, q, k and v standard normal.")  # fmt: skip
    why = (" A sparse pattern gives exactly 0 weight to the keys it skips, so KL(exact ‖ route) is infinite wherever "
           "exact attention weighed one of them; the share of exact weight it keeps, and KL(route ‖ exact) = −log of "
           "that share, stay finite." if variant in PATTERNS else "")  # fmt: skip
    draw.prose(where + why)
