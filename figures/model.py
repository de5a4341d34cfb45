"""Figures of the pretrained model's page: every head at once, one token's row in every head, and
layer × head summaries (attention sinks, entropy). Weights use the app's fixed 0…1 blue scale."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .arrays import shrink
from .cells import cell_labels
from .style import HIGHLIGHT, SEQUENTIAL, base_layout, font_size


def head_label(layer: int, head: int) -> str:
    """The name of a head on every figure and sentence of the page: L3·H1 (counted from 0)."""
    return f"L{layer}·H{head}"


def layer_head_grid(
    weights: np.ndarray, tokens: Sequence[str], *, selected: tuple[int, int] | None = None, talk: bool = False,
) -> go.Figure:  # fmt: skip
    """Every head's L×L tile of ``weights (n_layers, H, L, L)`` in one heatmap, layers down, heads across, with a
    gap of about a sixth of a tile between tiles; the ``selected`` (layer, head) framed in the highlight colour.

    A tile is about 50 px wide on screen, so a long sentence's tiles are shrunk to at most 32 cells a
    side (each cell the mean of a k×k block). A transparent marker sits at each tile's centre, one per head in
    layer-major order (point ``i`` is head ``divmod(i, H)``): a click anywhere on a tile selects that head.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 4 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"weights must be (n_layers, H, L, L), got shape {w.shape}")
    if len(tokens) != w.shape[-1]:
        raise ValueError(f"{len(tokens)} token labels for {w.shape[-1]} tokens")
    w, block = shrink(w, 32)
    n_layers, n_heads, n, _ = w.shape
    gap = max(1, n // 6)  # blank rows/columns between tiles, in cells
    step = n + gap
    z = np.full((n_layers * step - gap, n_heads * step - gap), np.nan, dtype=np.float32)  # half the bytes
    for layer, head in np.ndindex(n_layers, n_heads):
        z[layer * step : layer * step + n, head * step : head * step + n] = w[layer, head]  # (m, m)
    centre, heads = (n - 1) / 2, list(np.ndindex(n_layers, n_heads))
    fig = go.Figure(go.Heatmap(
        z=z, colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, hoverinfo="skip",
        colorbar={"thickness": 12, "len": 0.8, "title": {"text": "weight", "side": "right"}},
    ))  # fmt: skip
    note = f"<br>(shown as means of {block}×{block} blocks)" if block > 1 else ""
    fig.add_scatter(
        x=[h * step + centre for _, h in heads], y=[lay * step + centre for lay, _ in heads], mode="markers",
        marker={"size": 1, "opacity": 0}, customdata=[head_label(*lh) for lh in heads], showlegend=False,
        name="heads", hovertemplate=f"%{{customdata}}<br>click: open this head in the walkthrough{note}<extra></extra>",
    )  # fmt: skip
    if selected is not None:
        layer, head = selected
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"selected head {selected} is outside {n_layers} layers × {n_heads} heads")
        pad = max(0.5, gap / 2)
        fig.add_shape(type="rect", x0=head * step - pad, x1=head * step + n - 1 + pad, y0=layer * step - pad,
                      y1=layer * step + n - 1 + pad, line={"color": HIGHLIGHT, "width": 4})  # fmt: skip
    size = font_size(talk)
    fig.update_xaxes(
        tickvals=[h * step + centre for h in range(n_heads)], ticktext=[f"H{h}" for h in range(n_heads)],
        side="top", range=[-gap, n_heads * step], tickfont={"size": size}, fixedrange=True,
    )  # fmt: skip
    fig.update_yaxes(
        tickvals=[lay * step + centre for lay in range(n_layers)], ticktext=[f"L{lay}" for lay in range(n_layers)],
        autorange="reversed", tickfont={"size": size}, fixedrange=True,
    )  # fmt: skip
    fig.update_layout(hovermode="closest", hoverdistance=-1, dragmode=False, clickmode="event+select")
    return base_layout(fig, talk=talk, height=390 if talk else 430, grid=False)  # talk: 6 rows fit 720 px


def token_across_heads(rows: np.ndarray, tokens: Sequence[str], query: int, *, talk: bool = False) -> go.Figure:
    """One token's attention in every head: rows are the tokens it looks at, columns the 6 × 12 heads
    (grouped by layer). ``rows`` is ``(n_layers, H, L)``."""
    r = np.asarray(rows, dtype=float)
    if r.ndim != 3 or r.shape[-1] != len(tokens):
        raise ValueError(f"rows must be (n_layers, H, L={len(tokens)}), got shape {r.shape}")
    if not 0 <= query < len(tokens):
        raise ValueError(f"query {query} is not a token index in [0, {len(tokens)})")
    n_layers, n_heads, n = r.shape
    gap = 1  # a blank column between layers
    z = np.full((n, n_layers * (n_heads + gap) - gap), np.nan)
    names = np.full(z.shape, "", dtype=object)
    for layer, head in np.ndindex(n_layers, n_heads):
        z[:, layer * (n_heads + gap) + head] = r[layer, head]
        names[:, layer * (n_heads + gap) + head] = head_label(layer, head)
    labels = [f"{t} ·{j}" if tokens.count(t) > 1 else t for j, t in enumerate(tokens)]
    size = font_size(talk)
    fig = go.Figure(
        go.Heatmap(
            z=z, y=labels, colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, customdata=names, xgap=1, ygap=1,
            hovertemplate=f"%{{customdata}}: “{tokens[query]}” → “%{{y}}” %{{z:.2f}}<extra></extra>",
            colorbar={"thickness": 12, "len": 0.9},
        )
    )  # fmt: skip
    mid = (n_heads - 1) / 2
    fig.update_xaxes(
        tickvals=[layer * (n_heads + gap) + mid for layer in range(n_layers)],
        ticktext=[f"L{layer}" for layer in range(n_layers)], side="top", showgrid=False, fixedrange=True,
        tickfont={"size": size}, tickangle=0,  # "layer 0" … "layer 5" slanted into each other on a phone
    )  # fmt: skip
    fig.update_yaxes(type="category", autorange="reversed", showgrid=False, tickfont={"size": size}, fixedrange=True)
    fig.add_shape(
        type="rect", xref="paper", x0=0, x1=1, yref="y", y0=query - 0.5, y1=query + 0.5,
        line={"color": HIGHLIGHT, "width": 3},
    )  # fmt: skip
    per_row = 30 if talk else 24
    return base_layout(fig, talk=talk, height=max(280, 90 + per_row * n))


def layer_head_map(values: np.ndarray, *, title: str, talk: bool = False) -> go.Figure:
    """A ``(n_layers, H)`` table of shares in [0, 1], each cell written out; the heads numbered across the top
    (bare numbers, which stay level on a phone, where "H10" turned on end and ran into the title)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"values must be (n_layers, H), got shape {v.shape}")
    if v.size and (np.nanmin(v) < -1e-9 or np.nanmax(v) > 1 + 1e-9):
        raise ValueError("values must be shares in [0, 1]")
    n_layers, n_heads = v.shape
    size = font_size(talk)
    fig = go.Figure(
        go.Heatmap(
            z=v, x=[str(h) for h in range(n_heads)], y=[f"L{layer}" for layer in range(n_layers)],
            text=cell_labels(v), texttemplate="%{text}", textfont={"size": size - (2 if talk else 3)},
            colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, xgap=2, ygap=2, showscale=False,
            hovertemplate="%{y}·H%{x}: %{z:.3f}<extra></extra>",
        )
    )  # fmt: skip
    fig.update_yaxes(autorange="reversed", type="category", showgrid=False, fixedrange=True, tickfont={"size": size})
    fig.update_xaxes(type="category", side="top", showgrid=False, fixedrange=True, tickfont={"size": size},
                     tickangle=0, title={"text": "head", "font": {"size": size - 2}, "standoff": 4})  # fmt: skip
    base_layout(fig, title=title, talk=talk, height=445 if talk else 325)
    fig.update_layout(margin={"t": 135 if talk else 105})  # the title clears the heads axis
    return fig
