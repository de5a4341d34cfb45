"""Figures of the Beyond n² page: a sparse pattern at token and tile level, the error of the kernel and
low-rank routes against their size, the spectrum of trained attention, and a panel of attention weights.

A route keeps its colour from ``IMPL_COLORS`` here and on the cost figures (``figures.benchmark``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .style import HIGHLIGHT, IMPL_COLORS, SCALED, SEQUENTIAL, THEORY, chart_layout, font_size

SKIPPED, PARTIAL = "#EEEEEE", "#9CC9E8"  # tile states: never computed, computed then masked (full: SCALED)
TILE_NAMES = ("skipped", "computed, masked", "computed, full")
ABOVE = {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"}  # a legend in rows above the plot


def _square_axes(fig: go.Figure, x_title: str, y_title: str) -> None:
    fig.update_xaxes(title_text=x_title, scaleanchor="y", constrain="domain", showgrid=False)
    fig.update_yaxes(title_text=y_title, autorange="reversed", constrain="domain", showgrid=False)


def _titled(fig: go.Figure, title: str, *, talk: bool, height: int) -> go.Figure:
    """:func:`chart_layout` with a panel's title over its plot, in the labels' size."""
    chart_layout(fig, talk=talk, height=height, top=50)
    return fig.update_layout(title={"text": title, "font": {"size": font_size(talk)}, "x": 0.5, "xanchor": "center"})


def tokens_figure(allowed: np.ndarray, tile: int, *, talk: bool = False) -> go.Figure:
    """``allowed (z, z)``: who may attend to whom among the first z tokens, with the ``tile × tile`` grid a
    block-sparse kernel works in drawn over it."""
    allowed = np.asarray(allowed, dtype=np.uint8)
    if allowed.ndim != 2:
        raise ValueError(f"allowed must be 2-D, got shape {allowed.shape}")
    if tile < 1:
        raise ValueError(f"tile must be ≥ 1, got {tile}")
    z = allowed.shape[0]
    fig = go.Figure()
    fig.add_heatmap(z=allowed, colorscale=[[0, SKIPPED], [1, SCALED]], zmin=0, zmax=1, showscale=False,
                    hovertemplate="query %{y} → key %{x}: %{z}<extra>1 = may attend</extra>")  # fmt: skip
    for edge in range(tile, z, tile):  # the tiles the kernel works in
        fig.add_vline(x=edge - 0.5, line={"color": THEORY, "width": 1})
        fig.add_hline(y=edge - 0.5, line={"color": THEORY, "width": 1})
    _square_axes(fig, "key", "query")
    return _titled(fig, f"First {z} tokens", talk=talk, height=480)


def tiles_figure(states: np.ndarray, n: int, tile: int, *, talk: bool = False) -> go.Figure:
    """``states (t, t)`` of every ``tile × tile`` tile of the ``(n, n)`` pattern (0 skipped, 1 computed then
    masked, 2 computed in full), as a block-sparse kernel sees it; the title says the share skipped."""
    states = np.asarray(states, dtype=np.int8)
    if states.ndim != 2:
        raise ValueError(f"states must be 2-D, got shape {states.shape}")
    skipped = float(np.mean(states == 0))
    scale = [[0, SKIPPED], [1 / 3, SKIPPED], [1 / 3, PARTIAL], [2 / 3, PARTIAL], [2 / 3, SCALED], [1, SCALED]]
    gap = 1 if states.shape[0] <= 32 else 0
    fig = go.Figure()
    fig.add_heatmap(z=states, zmin=-0.5, zmax=2.5, colorscale=scale, xgap=gap, ygap=gap,
                    customdata=np.array(TILE_NAMES)[states],
                    hovertemplate="query tile %{y}, key tile %{x}: %{customdata}<extra></extra>",
                    colorbar={"tickvals": [0, 1, 2], "ticktext": [t.replace(", ", ",<br>") for t in TILE_NAMES],
                              "thickness": 14, "len": 0.7,  # two short lines: a phone's plot keeps the width
                              "tickfont": {"size": font_size(talk) - 2}})  # fmt: skip
    _square_axes(fig, f"key tile ({tile} tokens)", "query tile")
    return _titled(fig, f"n = {n}: {skipped:.0%} of the tiles skipped", talk=talk, height=480)


def error_figure(
    curves: Mapping[str, tuple[str, Sequence[int], Sequence[float], Sequence[float]]],
    trend: tuple[Sequence[int], Sequence[float]],
    flat: Mapping[str, tuple[str, float]],
    *,
    talk: bool = False,
) -> go.Figure:
    """Relative error against size, log-log: ``curves[name] = (route, sizes, mean, std)`` as lines with error bars
    in the route's colour (dashed for a route's second curve), ``trend`` the fitted c/√m, ``flat[name] = (route,
    error)`` a route with no size to grow (a horizontal line)."""
    fig, seen = go.Figure(), set()
    for name, (route, xs, mean, std) in curves.items():
        fig.add_scatter(x=list(xs), y=list(mean), error_y={"type": "data", "array": list(std)}, name=name,
                        mode="lines+markers", line={"color": IMPL_COLORS.get(route, THEORY), "width": 3,
                        "dash": "dash" if route in seen else "solid"}, marker={"size": 8},
                        hovertemplate=f"{name}<br>size %{{x}}<br>error %{{y:.3g}}<extra></extra>")  # fmt: skip
        seen.add(route)
    fig.add_scatter(x=list(trend[0]), y=list(trend[1]), name="c/√m", mode="lines", hoverinfo="skip",
                    line={"color": THEORY, "dash": "dot", "width": 2})  # fmt: skip
    for name, (route, value) in flat.items():
        fig.add_scatter(x=[min(min(c[1]) for c in curves.values()), max(max(c[1]) for c in curves.values())],
                        y=[value, value], mode="lines", name=name, line={"color": IMPL_COLORS.get(
                        route, THEORY), "dash": "dashdot", "width": 3}, hovertemplate=f"{name}: %{{y:.3g}}, at any "
                        "size<extra></extra>")  # fmt: skip
    fig.update_xaxes(type="log", title_text="features m (Performer) or rank k (Linformer)", dtick=np.log10(2),
                     tickformat="d")  # fmt: skip
    fig.update_yaxes(type="log", title_text="relative error", dtick=1)
    return chart_layout(fig, talk=talk, height=480, legend=ABOVE)


def spectrum_figure(energy: np.ndarray, k: int, *, talk: bool = False) -> go.Figure:
    """Share of each attention map's energy (Σσ²) in its top 1…r singular values: ``energy (maps, r)``, the
    median over maps as a line, the 10th–90th percentiles as a band, the chosen ``k`` marked."""
    energy = np.asarray(energy, dtype=float)
    if energy.ndim != 2 or energy.shape[1] < 1:
        raise ValueError(f"energy must be (maps, r), got shape {energy.shape}")
    ks = np.arange(1, energy.shape[1] + 1)
    lo, mid, hi = np.percentile(energy, [10, 50, 90], axis=0)
    fig = go.Figure()
    fig.add_scatter(x=ks, y=hi, mode="lines", line={"width": 0}, showlegend=False, hoverinfo="skip")
    fig.add_scatter(x=ks, y=lo, mode="lines", line={"width": 0}, fill="tonexty", fillcolor="rgba(0,114,178,0.18)",
                    name="10th–90th percentile", hoverinfo="skip")  # fmt: skip
    fig.add_scatter(x=ks, y=mid, mode="lines", line={"color": SCALED, "width": 3}, name="median map",
                    hovertemplate="top %{x} singular values: %{y:.1%} of the energy<extra></extra>")  # fmt: skip
    k = int(min(max(k, 1), energy.shape[1]))
    fig.add_scatter(x=[k, k], y=[0, mid[k - 1]], mode="lines+markers+text", text=["", f"k = {k}: {mid[k - 1]:.0%}"],
                    textposition="bottom right", textfont={"size": font_size(talk)}, showlegend=False,
                    line={"color": HIGHLIGHT, "width": 3}, marker={"size": [0, 11]}, hoverinfo="skip")  # fmt: skip
    fig.update_xaxes(title_text="k, the largest singular values kept", type="log", dtick=np.log10(2), tickformat="d")
    fig.update_yaxes(title_text="share of the energy Σσ²", tickformat=".0%", range=[0, 1.02])
    return chart_layout(fig, talk=talk, height=480, legend=ABOVE)


def weights_figure(
    weights: np.ndarray | None, labels: Sequence[str], title: str, note: str | None = None,
    *, scale: bool = True, talk: bool = False,
) -> go.Figure:  # fmt: skip
    """One panel of weights ``(L, S)`` on the 0…1 scale (``scale``: with its colour bar), titled ``title``; the
    page sets exact softmax beside a route's. ``None``: the route has no weights that form a distribution, and
    ``note`` says why."""
    fig = go.Figure()
    if weights is None:
        why = "<br>".join(textwrap.wrap(note or "this route has none", 28))
        fig.add_annotation(text=f"No weights to draw:<br>{why}", showarrow=False, x=0.5, y=0.5, xref="paper",
                           yref="paper")  # fmt: skip
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return _titled(fig, title, talk=talk, height=460)
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or len(labels) != w.shape[1]:
        raise ValueError(f"weights must be (L, S) with S = {len(labels)} labels, got shape {w.shape}")
    fig.add_heatmap(z=w, zmin=0, zmax=1, colorscale=SEQUENTIAL, showscale=scale,
                    colorbar={"thickness": 12, "len": 0.8},
                    hovertemplate="query %{y} → key %{x}: %{z:.3f}<extra></extra>")  # fmt: skip
    _square_axes(fig, "key", "query")
    if len(labels) <= 40:  # token names, by position (a sentence repeats words)
        ticks = {"tickvals": list(range(len(labels))), "ticktext": list(labels)}
        fig.update_xaxes(**ticks, tickangle=-60)
        fig.update_yaxes(**ticks)
    return _titled(fig, title, talk=talk, height=460)
