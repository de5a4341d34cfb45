"""Kernels and low rank: how far linear attention, the Performer and Linformer move from softmax attention
as their size grows, and how close a trained model's attention maps are to low rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from attention_core.efficient.accuracy import ErrorCurve, random_qkv, relative_error
from attention_core.efficient.linear import linear_attention
from attention_core.efficient.lowrank import attention_spectrum
from attention_core.efficient.variants import error_curve
from attention_core.textbook import reference_attention
from figures.efficient import error_figure, spectrum_figure
from ui import draw
from ui.frame import talk

N, D, HEADS, SEEDS = 256, 64, 2, (0, 1, 2, 3, 4)
FEATURES = (8, 16, 32, 64, 128, 256, 512)
RANKS = (4, 8, 16, 32, 64, 128)  # below n: pooling to k = n rows is the identity, exact
SPREADS = {"spread": "Spread out", "peaked": "Peaked"}
STD = {"spread": D**-0.25, "peaked": 1.0}  # spread: each scaled |q|² ≈ 1; peaked: scores of spread ≈ 1
PERFORMER, CHI = "Performer, length √d", "Performer, Gaussian lengths"  # vectors of length √d, or a Gaussian's
PARAGRAPH = (
    "The animal didn't cross the street because it was too tired. It had walked all morning along the river, "
    "past the old mill and the bakery, and the traffic on the main road never seemed to stop. A child on the "
    "corner waved at it and a bus slowed down, but the animal lay down in the shade of a tree and waited for "
    "the evening, when the street would be quiet again."
)


@dataclass(frozen=True)
class ErrorCurves:
    """Each route's :class:`ErrorCurve` against exact attention by its name in the figure, with the route it
    belongs to (``curves[name] = (route, curve)``); linear attention's error, which has no size."""

    curves: dict[str, tuple[str, ErrorCurve]]
    linear: float


@st.cache_data(show_spinner="Measuring each route against exact attention on random inputs…")
def error_curves(spread: str) -> ErrorCurves:
    std = STD[spread]
    common = {"n": N, "d": D, "heads": HEADS, "seeds": SEEDS, "std": std}
    curves = {PERFORMER: ("performer", error_curve("performer", FEATURES, **common)),
              CHI: ("performer", error_curve("performer", FEATURES, **common, lengths="chi"))} | {
        f"Linformer, {name}": ("linformer", error_curve("linformer", RANKS, **common, kind=kind))
        for kind, name in (("gaussian", "random"), ("pool", "pooled"))
    }  # fmt: skip
    linear = []
    for seed in SEEDS:
        q, k, v = random_qkv(N, D, heads=HEADS, seed=seed, std=std)
        linear.append(relative_error(linear_attention(q, k, v), reference_attention(q, k, v)))
    return ErrorCurves(curves, float(np.mean(linear)))


@st.cache_data(show_spinner=False)
def spectrum() -> tuple[np.ndarray, int]:
    """The energy in the top 1…L singular values of each of the model's 72 maps on the paragraph: (72, L)."""
    from attention_core.bert.analysis import sentence_weights
    from ui.model import encoder

    tokens, w = sentence_weights(encoder(), PARAGRAPH)  # (6, 12, L, L)
    return attention_spectrum(w.flatten(0, 1)).energy.numpy(), len(tokens)


def _errors(is_talk: bool, spread: str) -> Any:
    d = error_curves(spread)
    perf = d.curves[PERFORMER][1]
    curves = {name: (route, c.x, c.mean, c.std) for name, (route, c) in d.curves.items()}
    return error_figure(curves, (perf.x, perf.inverse_sqrt_trend()), {"Linear (elu+1)": ("linear", d.linear)},
                        talk=is_talk)  # fmt: skip


def _spectrum(is_talk: bool, k: int) -> Any:
    return spectrum_figure(spectrum()[0], k, talk=is_talk)


def approx_tab() -> None:
    (c,) = draw.settings([1, 1, 2])
    spread = c[0].segmented_control("Attention", tuple(SPREADS), format_func=SPREADS.__getitem__, default="spread",
                                    key="ef_spread", bind="query-params", required=True,
                                    help="Random q and k: spread-out scores (each scaled |q|² ≈ 1) or peaked ones.")
    k = c[1].slider("Top k", 1, 64, 8, key="ef_k", bind="query-params", help="Singular values kept, on the right.")
    d = error_curves(spread)
    draw.prose(
        "**Kernels.** Linear attention swaps exp(q·k) for φ(q)·φ(k) with φ = elu + 1, so the sum over keys can be "
        "taken once: time and memory grow as n. It is a different function, not an approximation: its error does "
        "not shrink. The **Performer** picks random features whose dot product *estimates* exp(q·k): its error "
        "falls as 1/√m with m features. **Linformer** projects the n keys and values to k rows.",
    )
    draw.panels([draw.figure(_errors, talk(), spread), draw.figure(_spectrum, talk(), k)], ["ef_errors", "ef_spectrum"],
                fit="efficient.Kernels & low rank")
    energy, n_tokens = spectrum()
    perf, chi = d.curves[PERFORMER][1], d.curves[CHI][1]
    draw.metrics(
        ("Performer, 16 → 256 features", f"{perf.ratio(16, 256):.1f}× smaller", f"log-log slope "
         f"{draw.fmt(perf.slope(), 2)} (1/√m: −0.5); Gaussian lengths {chi.ratio(16, 256):.1f}×"),
        ("Linear (elu + 1)", f"{d.linear:.0%}", "relative error at any n"),
        (f"Top {k} of {n_tokens} singular values", f"{np.median(energy[:, min(k, n_tokens) - 1]):.0%}",
         "of the energy, median over the 72 maps"),
    )  # fmt: skip
    draw.prose(
        f"Left: random inputs, n = {N}, d = {D}, {HEADS} heads, mean ± spread over {len(SEEDS)} seeds. An untrained "
        "Linformer projection is random (Gaussian) or averages runs of tokens (pool, exact at k = n). Right: "
        f"all-MiniLM-L6-v2's 72 attention maps on a paragraph of {n_tokens} tokens (“{PARAGRAPH[:60]}…”). "
        "Most of each map's energy sits in a few singular values: the evidence Linformer's low-rank claim rests on.",
        "The Performer's random vectors all have length √d. Drawn with a Gaussian vector's length instead "
        "(dashed), the estimate is exactly unbiased but heavy-tailed, its rare long vectors dominating: at a larger "
        "scaled |q|² (1.4, with d = 32 and q, k of spread 0.5) its error falls only 2.9× from 16 to 256 features and "
        "meets the 1/√m line only past about 4,000, where length √d falls 3.8× at the price of a small bias that "
        "shows only past about 16,000 features (3% error there).",
    )
