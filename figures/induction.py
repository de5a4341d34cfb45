"""Figures of the "Watch it learn" page: the loss of both halves as the model trains, every head's pattern on
one repeated sequence, the heads' scores over training, and a sequence read by the trained model.

Each builder takes plain numbers (lists, numpy arrays) and returns a ``go.Figure``. The repeated half keeps
the colour of "scaled" attention (the one that learns); the first half, which nothing can predict, is grey.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .arrays import as_array
from .style import HIGHLIGHT, SCALED, SEQUENTIAL, THEORY, UNSCALED, chart_layout, font_size

FIRST, REPEAT = "#888888", SCALED  # the two halves' losses
# The weight's colour bar lies under the heatmap: at its right it took a third of a phone's width from the columns.
COLORBAR_BELOW = {"orientation": "h", "thickness": 10, "len": 0.6, "x": 0.5, "y": -0.02, "yanchor": "top",
                  "title": {"text": "weight", "side": "right"}}  # fmt: skip
HEAD_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


def head_name(layer: int, head: int) -> str:
    """``L1 H2``: how every figure and table names a head."""
    return f"L{layer} H{head}"


def loss_figure(
    steps: Sequence[float], loss_first: Sequence[float], loss_repeat: Sequence[float], *, chance: float,
    max_step: int, phase_step: int | None = None, talk: bool = False, height: int = 420,
) -> go.Figure:  # fmt: skip
    """Both halves' mean cross-entropy against the step, ``chance`` = ln V dashed, the phase change marked.

    The x-axis runs to ``max_step`` from the start, so a live run fills the frame instead of rescaling it.
    """
    x = as_array(steps)
    fig = go.Figure()
    fig.add_hline(y=chance, line={"color": THEORY, "dash": "dot", "width": 1.5})
    fig.add_scatter(x=x, y=as_array(loss_first), name="first half", mode="lines", line={"color": FIRST, "width": 2.5},
                    hovertemplate="step %{x}: %{y:.3f} nats<extra>first</extra>")  # fmt: skip
    fig.add_scatter(x=x, y=as_array(loss_repeat), name="repeated half", mode="lines",
                    line={"color": REPEAT, "width": 3.5},
                    hovertemplate="step %{x}: %{y:.3f} nats<extra>repeat</extra>")  # fmt: skip
    fig.add_annotation(x=max_step, y=chance, text=f"chance: ln V = {chance:.2f}", showarrow=False, xanchor="right",
                       yanchor="top", font={"color": THEORY, "size": font_size(talk) - 3})  # fmt: skip
    if phase_step is not None:
        fig.add_vline(x=phase_step, line={"color": HIGHLIGHT, "width": 2, "dash": "dash"})
        fig.add_annotation(x=phase_step, y=1, yref="paper", text=f"phase change · step {phase_step}",
                           showarrow=False, xanchor="center", yanchor="bottom",
                           font={"color": "#9A6A00", "size": font_size(talk) - 2})  # fmt: skip
    fig.update_xaxes(title_text="training step", range=[0, max(max_step, 1)])
    fig.update_yaxes(title_text="loss (nats)", range=[0, max(chance * 1.35, 1.0)])
    chart_layout(fig, talk=talk, height=height, note_size=-1)
    inside = {"x": 0.98, "xanchor": "right", "y": 0.45, "yanchor": "middle", "bgcolor": "rgba(255,255,255,0.85)"}
    return fig.update_layout(legend=inside, margin={"t": 36 if not talk else 44})


def patterns_figure(
    patterns: np.ndarray, tokens: Sequence[int], titles: Sequence[Sequence[str]], *, half: int | None = None,
    row_titles: Sequence[str] | None = None, talk: bool = False, height: int = 420,
) -> go.Figure:  # fmt: skip
    """A grid of heatmaps, ``patterns (layers, H, L, L)``: row l is layer l, column h head h, on ``tokens (L,)``.

    ``titles[l][h]`` names each panel, ``row_titles[l]`` each row (default "layer l"). With ``half``, the
    sequence repeats its first ``half`` tokens and a thin line marks where the repeat begins; the induction
    stripe lies ``half − 1`` below the diagonal.
    """
    w = as_array(patterns)
    if w.ndim != 4 or w.shape[-1] != w.shape[-2] or w.shape[-1] != len(tokens):
        raise ValueError(f"patterns must be (layers, H, L, L) over the {len(tokens)} tokens, got {w.shape}")
    layers, heads, n = w.shape[:3]
    flat = [t for row in titles for t in row]
    fig = make_subplots(rows=layers, cols=heads, subplot_titles=flat, horizontal_spacing=0.025,
                        vertical_spacing=0.1 if talk else 0.08)  # fmt: skip
    labels = [f"{i} ({t})" for i, t in enumerate(tokens)]  # position (token): the axes' categories, in hovers
    for layer in range(layers):
        for h in range(heads):
            fig.add_heatmap(z=w[layer, h], zmin=0, zmax=1, colorscale=SEQUENTIAL, showscale=False, x=labels, y=labels,
                            hovertemplate="query %{y} → key %{x}: %{z:.2f}<extra></extra>", row=layer + 1, col=h + 1)
            if half is not None and 0 < half < n:
                fig.add_shape(type="line", x0=-0.5, x1=n - 0.5, y0=half - 0.5, y1=half - 0.5,
                              line={"color": HIGHLIGHT, "width": 1}, row=layer + 1, col=h + 1)  # fmt: skip
    fig.update_xaxes(showticklabels=False, showgrid=False, constrain="domain", scaleanchor="y")
    fig.update_yaxes(showticklabels=False, showgrid=False, autorange="reversed", constrain="domain")
    for i in range(2, layers * heads + 1):  # every panel square on its own axes
        fig.layout[f"xaxis{i}"].scaleanchor = f"y{i}"
    for layer in range(layers):
        fig.update_yaxes(title_text=row_titles[layer] if row_titles else f"layer {layer}", title_standoff=4,
                         row=layer + 1, col=1)  # fmt: skip
    chart_layout(fig, talk=talk, height=height, top=30, note_size=-1)
    return fig.update_annotations(font={"size": font_size(talk) - (4 if talk else 2)})


def scores_figure(
    steps: Sequence[float], previous: np.ndarray, prefix: np.ndarray, *, max_step: int, last_layer: int = 1,
    talk: bool = False, height: int = 320,
) -> go.Figure:  # fmt: skip
    """Two panels over training: each layer-0 head's previous-token score, each last-layer head's prefix-matching
    score. ``previous (T, H)`` and ``prefix (T, H)`` hold one row per step of ``steps (T,)``."""
    x, prev, pm = as_array(steps), as_array(previous), as_array(prefix)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08, shared_yaxes=True,
                        subplot_titles=("L0: previous-token", f"L{last_layer}: prefix matching"))  # fmt: skip
    for col, values in enumerate((prev, pm), start=1):
        for h in range(values.shape[1]):
            name = f"head {h}"
            fig.add_scatter(x=x, y=values[:, h], mode="lines", name=name, legendgroup=name, showlegend=col == 1,
                            line={"color": HEAD_COLORS[h % len(HEAD_COLORS)], "width": 2.5}, row=1, col=col,
                            hovertemplate=f"{name}, step %{{x}}: %{{y:.2f}}<extra></extra>")  # fmt: skip
    fig.update_xaxes(title_text="training step", range=[0, max(max_step, 1)])
    fig.update_yaxes(range=[0, 1.02])
    fig.update_yaxes(title_text="score", row=1, col=1)
    chart_layout(fig, talk=talk, height=height, note_size=-1)
    return fig.update_layout(legend={"orientation": "h", "x": 1, "xanchor": "right", "y": -0.25, "yanchor": "top"})


def position_loss_figure(
    tokens: Sequence[int], curves: dict[str, Sequence[float]], *, half: int | None = None, talk: bool = False,
    height: int = 340,
) -> go.Figure:  # fmt: skip
    """The loss of predicting each next token, ``curves[name] (L − 1,)``, along the sequence ``tokens (L,)``."""
    n = len(tokens)
    fig = go.Figure()
    colors = iter((REPEAT, UNSCALED, FIRST, THEORY))
    top = 0.0
    for name, values in curves.items():
        y = as_array(values)
        if y.shape != (n - 1,):
            raise ValueError(f"curve {name!r} must hold one loss per prediction ({n - 1}), got {y.shape}")
        top = max(top, float(np.nanmax(y, initial=0.0)))
        fig.add_scatter(x=np.arange(1, n), y=y, mode="lines+markers", name=name, line={"color": next(colors),
                        "width": 2.5}, hovertemplate="predicting token %{x}: %{y:.2f} nats<extra>" + name + "</extra>")
    if half is not None:
        fig.add_vrect(x0=half + 0.5, x1=n - 0.5, fillcolor=SCALED, opacity=0.06, line_width=0)
        fig.add_annotation(x=half + 0.5, y=1, yref="paper", text=" the repeat", showarrow=False, xanchor="left",
                           yanchor="top", font={"size": font_size(talk) - 3})  # fmt: skip
    fig.update_xaxes(title_text="position of the predicted token", range=[0.5, n - 0.5])
    # A fifth of headroom above the highest loss keeps "the repeat" clear of the curves.
    fig.update_yaxes(title_text="loss (nats)", range=[0, 1.25 * top if top > 0 else 1])
    chart_layout(fig, talk=talk, height=height, note_size=-1)
    return fig.update_layout(legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "xanchor": "left"})


def sequence_figure(
    weights: np.ndarray, tokens: Sequence[int], predicted: Sequence[int], confidence: Sequence[float], *,
    talk: bool = False, height: int = 460,
) -> go.Figure:  # fmt: skip
    """One head's pattern ``weights (L, L)`` on ``tokens (L,)``, with the model's next-token guess under each
    query: ``predicted (L,)`` with its probability ``confidence (L,)``."""
    w = as_array(weights)
    n = len(tokens)
    if w.shape != (n, n) or len(predicted) != n or len(confidence) != n:
        raise ValueError(f"weights must be ({n}, {n}) and one guess per token, got {w.shape}, {len(predicted)}")
    guesses = [f"{i}: {t}, guess {p} ({c:.0%})" for i, (t, p, c) in enumerate(zip(tokens, predicted, confidence,
                                                                               strict=True))]  # fmt: skip
    fig = go.Figure(go.Heatmap(z=w, zmin=0, zmax=1, colorscale=SEQUENTIAL, customdata=np.array(guesses)[:, None]
                               .repeat(n, axis=1), colorbar=COLORBAR_BELOW,
                               hovertemplate="query %{customdata}<br>key %{x}: %{z:.2f}<extra></extra>"))  # fmt: skip
    if n <= 16:  # short sequences: the larger weights written in their cells
        fig.update_traces(text=np.where(w >= 0.3, np.round(w, 2).astype(str), ""), texttemplate="%{text}",
                          textfont={"size": font_size(talk) - 6})  # fmt: skip
    chart_layout(fig, talk=talk, height=height, top=10, note_size=-1)
    small = font_size(talk) - (7 if talk else 3)
    # The keys are the rows' tokens again, which the rows name in full: on top every k-th of them, upright, at
    # most a dozen (all of 20, slanted, piled into each other on a phone's 200 px).
    fig.update_traces(colorbar_title_font_size=small, colorbar_tickfont_size=small)
    every = max(1, math.ceil(n / 12))
    fig.update_xaxes(tickmode="array", tickvals=list(range(0, n, every)), ticktext=[str(t) for t in tokens][::every],
                     side="top", showgrid=False, tickfont={"size": small}, tickangle=-90)  # fmt: skip
    return fig.update_yaxes(tickmode="array", tickvals=list(range(n)), autorange="reversed", showgrid=False,
                            ticktext=[f"{t} → {p}" for t, p in zip(tokens, predicted, strict=True)],
                            tickfont={"size": small}, title_font={"size": small})  # fmt: skip
