"""Figures of the decoder page (gemma-3-270m): next-token bars, every head as a grid, the rows of a generation,
four query heads on one shared K/V, a local layer's window band beside a global layer's triangle, and the share
each layer puts on the first token. Weights use the app's fixed 0…1 blue scale; blocked cells stay blank."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .model import head_label
from .style import HIGHLIGHT, MASKED, SEQUENTIAL, THEORY, base_layout, font_size

LOCAL = "#0072B2"  # blue: a sliding-window layer
GLOBAL = "#D55E00"  # vermillion: a full-causal layer
WINDOW_OFF = "#999999"  # the same model with the window switched off


def token_label(token: str, limit: int = 16) -> str:
    """A token as an axis shows it: a leading space as ␣, a newline as ↵, a tab as ⇥, cut at ``limit``."""
    s = token.replace("▁", " ").replace("\n", "↵").replace("\t", "⇥")
    s = "␣" + s[1:] if s.startswith(" ") else s
    s = s if s.strip() or not s else s.replace(" ", "␣")
    s = s or "∅"
    return s if len(s) <= limit else s[: limit - 1] + "…"


def unique_labels(tokens: Sequence[str]) -> list[str]:
    """Distinct axis labels: a repeated token gets its position (“␣the ·7”), as plotly merges equal categories."""
    shown = [token_label(t) for t in tokens]
    counts = Counter(shown)
    return [f"{s} ·{i}" if counts[s] > 1 else s for i, s in enumerate(shown)]


def _check_probs(name: str, p: Sequence[float], n: int) -> np.ndarray:
    a = np.asarray(p, dtype=float)
    if a.shape != (n,):
        raise ValueError(f"{name} must hold one probability per token ({n}), got shape {a.shape}")
    if n and (not np.isfinite(a).all() or a.min() < -1e-9 or a.max() > 1 + 1e-9):
        raise ValueError(f"{name} must be probabilities in [0, 1]")
    return a


def next_token_figure(
    tokens: Sequence[str], probs: Sequence[float], *, talk: bool = False
) -> go.Figure:
    """The top-k next tokens as horizontal bars, most likely on top, each bar's probability written on it."""
    p = _check_probs("probs", probs, len(tokens))
    labels = unique_labels(tokens)
    size = font_size(talk)
    fig = go.Figure(go.Bar(x=p, y=labels, orientation="h", marker={"color": LOCAL}, text=[f"{x:.1%}" for x in p],
                           textposition="outside", cliponaxis=False, textfont={"size": size},
                           hovertemplate="“%{y}”: %{x:.4f}<extra></extra>"))  # fmt: skip
    fig.update_yaxes(type="category", autorange="reversed", tickfont={"size": size}, fixedrange=True, showgrid=False)
    top = float(p.max()) if len(p) else 1.0
    fig.update_xaxes(range=[0, min(1.0, top * 1.25) or 1.0], tickformat=".0%", fixedrange=True,
                     title={"text": "probability of being the next token"})  # fmt: skip
    rows = max(len(tokens), 3)
    return base_layout(fig, talk=talk, height=90 + 30 * rows if talk else 70 + 26 * rows)


def shift_figure(
    tokens: Sequence[str], p_on: Sequence[float], p_off: Sequence[float], *, window: int, talk: bool = False
) -> go.Figure:
    """Next-token probabilities with the sliding window (the model as trained) and with it switched off."""
    a, b = _check_probs("p_on", p_on, len(tokens)), _check_probs("p_off", p_off, len(tokens))
    labels = unique_labels(tokens)
    size = font_size(talk)
    fig = go.Figure()
    for probs, name, colour in ((a, f"window {window} on local layers (as trained)", LOCAL),
                                (b, "window off: every layer sees every token", WINDOW_OFF)):  # fmt: skip
        fig.add_bar(x=probs, y=labels, orientation="h", name=name, marker={"color": colour},
                    hovertemplate="“%{y}”: %{x:.4f}<extra>" + name.split(":")[0] + "</extra>")  # fmt: skip
    fig.update_yaxes(type="category", autorange="reversed", tickfont={"size": size}, fixedrange=True, showgrid=False)
    fig.update_xaxes(tickformat=".0%", fixedrange=True, title={"text": "next-token probability"})
    per_row = 44 if talk else 34
    base_layout(fig, talk=talk, height=110 + per_row * max(len(tokens), 3))
    return fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.12 - 0.4 / max(len(tokens), 3),
                                                      "x": 0, "yanchor": "top"})  # fmt: skip


def _check_layers(global_layers: Sequence[int], n_layers: int) -> None:
    if any(not 0 <= g < n_layers for g in global_layers):
        raise ValueError(f"global layers {tuple(global_layers)} must be layer indices in [0, {n_layers})")


def decoder_grid(
    weights: np.ndarray, *, global_layers: Sequence[int] = (), selected: tuple[int, int] | None = None,
    block: int = 1, talk: bool = False,
) -> go.Figure:  # fmt: skip
    """Every head's causal weights as one tiled heatmap: layers across, heads down (18 × 4 reads left to right).

    ``weights`` is ``(n_layers, H, m, m)``, already shrunk to a few dozen cells a side (``block`` tokens a cell:
    said in the hover). Cells above the diagonal are NaN and stay blank, so each tile shows its causal triangle.
    A transparent marker sits at each tile's centre, one per head in layer-major order (point ``i`` is head
    ``divmod(i, H)``): a click on a tile selects that head. Global layers get a vermillion label and frame.
    """
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 4 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"weights must be (n_layers, H, L, L), got shape {w.shape}")
    n_layers, n_heads, n, _ = w.shape
    _check_layers(global_layers, n_layers)
    gap = max(1, n // 6)
    step = n + gap
    z = np.full((n_heads * step - gap, n_layers * step - gap), np.nan, dtype=np.float32)
    heads = list(np.ndindex(n_layers, n_heads))  # layer-major: point i of the markers is head divmod(i, H)
    for layer, head in heads:
        z[head * step : head * step + n, layer * step : layer * step + n] = w[layer, head]  # (m, m) tile
    centre = (n - 1) / 2
    size = font_size(talk)
    fig = go.Figure(
        go.Heatmap(
            z=z, colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, hoverinfo="skip",
            colorbar={"thickness": 12, "len": 0.9, "title": {"text": "weight", "side": "right"}},
        )
    )  # fmt: skip
    names = [head_label(layer, head) + (" (global)" if layer in global_layers else " (local)") for layer, head in heads]
    note = f"<br>each cell: the mean of {block}×{block} tokens" if block > 1 else ""
    fig.add_scatter(
        x=[lay * step + centre for lay, _ in heads], y=[h * step + centre for _, h in heads], mode="markers",
        marker={"size": 1, "opacity": 0}, customdata=names, showlegend=False,
        hovertemplate=f"%{{customdata}}<br>click: open this head in the walkthrough{note}<extra></extra>", name="heads",
    )  # fmt: skip
    for g in global_layers:  # a thin frame around a global layer's column
        fig.add_shape(type="rect", x0=g * step - gap / 2 - 0.5, x1=g * step + n - 0.5 + gap / 2, y0=-gap / 2 - 0.5,
                      y1=n_heads * step - gap / 2 - 0.5, line={"color": GLOBAL, "width": 2})  # fmt: skip
    if selected is not None:
        layer, head = selected
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"selected head {selected} is outside {n_layers} layers × {n_heads} heads")
        pad = max(0.5, gap / 2)
        fig.add_shape(type="rect", x0=layer * step - pad, x1=layer * step + n - 1 + pad, y0=head * step - pad,
                      y1=head * step + n - 1 + pad, line={"color": HIGHLIGHT, "width": 4})  # fmt: skip
    # The layer's number alone (18 labels must fit a phone too), global ones in vermillion, as the title says.
    ticks = [f"<span style='color:{GLOBAL}'><b>{layer}</b></span>" if layer in global_layers else str(layer)
             for layer in range(n_layers)]  # fmt: skip
    title = f"layer (<span style='color:{GLOBAL}'>global</span> = full causal)"
    fig.update_xaxes(tickvals=[lay * step + centre for lay in range(n_layers)], ticktext=ticks, side="top",
                     range=[-gap, n_layers * step], tickfont={"size": size - 2}, fixedrange=True, tickangle=0,
                     title={"text": title, "font": {"size": size - 3}})  # fmt: skip
    fig.update_yaxes(tickvals=[h * step + centre for h in range(n_heads)], ticktext=[f"H{h}" for h in range(n_heads)],
                     autorange="reversed", tickfont={"size": size}, fixedrange=True)  # fmt: skip
    base_layout(fig, talk=talk, height=330 if talk else 300, grid=False)
    return fig.update_layout(hovermode="closest", hoverdistance=-1, dragmode=False, clickmode="event+select")


def generation_figure(
    rows: np.ndarray, context: Sequence[str], written: Sequence[str], *, n_prompt: int, talk: bool = False
) -> go.Figure:
    """The attention row of each generated token: one row per step (``written``), one column per token of the
    context (prompt, then what was written). ``rows`` is ``(n_steps, n_ctx)``; a step's future columns are NaN.
    A dotted line marks where the prompt ends."""
    r = np.asarray(rows, dtype=np.float32)
    if r.ndim != 2 or r.shape != (len(written), len(context)):
        raise ValueError(f"rows must be (steps={len(written)}, context={len(context)}), got shape {r.shape}")
    if not 0 <= n_prompt <= len(context):
        raise ValueError(f"n_prompt must be in [0, {len(context)}], got {n_prompt}")
    size = font_size(talk)
    x = unique_labels(context)
    y = [f"{i + 1}: {token_label(t)}" for i, t in enumerate(written)]
    fig = go.Figure(
        go.Heatmap(
            z=r, x=x, y=y, colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, xgap=1, ygap=1,
            hovertemplate="step %{y} looks at “%{x}”: %{z:.3f}<extra></extra>",
            colorbar={"thickness": 12, "len": 0.9},
        )
    )  # fmt: skip
    if 0 < n_prompt < len(context):
        fig.add_vline(x=n_prompt - 0.5, line={"color": THEORY, "dash": "dot", "width": 2})
    fig.update_xaxes(type="category", side="top", tickangle=-60, tickfont={"size": size - 4}, fixedrange=True,
                     showgrid=False, nticks=60)  # fmt: skip
    fig.update_yaxes(type="category", autorange="reversed", tickfont={"size": size - 2}, fixedrange=True,
                     showgrid=False, nticks=24)  # fmt: skip
    # Talk mode: what is left of a 720-px screen under the buttons and the written text; a long run: thinner rows.
    height = 320 if talk else min(700, max(220, 130 + 20 * len(written)))
    return base_layout(fig, talk=talk, height=height, grid=False)


def step_times_figure(written: Sequence[str], ms: Sequence[float], *, talk: bool = False) -> go.Figure:
    """Milliseconds of each generated token, as bars in order. The first token's time includes reading the
    prompt (grey); the dashed median is of the others, the cost of one step through the cache."""
    t = np.asarray(ms, dtype=float)
    if t.shape != (len(written),) or (len(t) and (not np.isfinite(t).all() or t.min() < 0)):
        raise ValueError(f"ms must hold one finite, non-negative time per token ({len(written)}), got {t.shape}")
    x = [f"{i + 1}: {token_label(s)}" for i, s in enumerate(written)]
    colours = [WINDOW_OFF] + [LOCAL] * (len(t) - 1) if len(t) else []
    fig = go.Figure(go.Bar(x=x, y=t, marker={"color": colours}, hovertemplate="%{x}: %{y:.1f} ms<extra></extra>"))
    steps = t[1:] if len(t) > 1 else t
    if len(steps):
        median = float(np.median(steps))
        fig.add_hline(y=median, line={"color": THEORY, "dash": "dash"}, annotation_position="right",
                      annotation={"text": f"median<br>{median:.0f} ms", "xanchor": "left"})  # fmt: skip
    fig.update_xaxes(type="category", tickangle=-45, fixedrange=True, tickfont={"size": font_size(talk) - 4})
    fig.update_yaxes(title={"text": "ms per token"}, rangemode="tozero", fixedrange=True)
    base_layout(fig, talk=talk, height=300 if talk else 260)
    return fig.update_layout(margin={"r": 110 if talk else 90})


def shared_kv_figure(
    weights: np.ndarray, tokens: Sequence[str], *, layer: int, head: int, block: int = 1, scale: bool = True,
    talk: bool = False,
) -> go.Figure:  # fmt: skip
    """One query head's weights ``(m, m)``, titled "query head ``head``" (``scale``: with the colour bar); the page
    sets a layer's query heads side by side: the same keys and values (one K/V head), four different queries,
    so four different patterns."""
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"weights must be (L, L), got shape {w.shape}")
    m = w.shape[0]
    labelled = block == 1 and len(tokens) == m
    if block == 1 and len(tokens) != m:
        raise ValueError(f"{len(tokens)} token labels for {m} tokens")
    labels = unique_labels(tokens) if labelled else [str(i * block) for i in range(m)]
    size = font_size(talk)
    fig = go.Figure()
    fig.add_heatmap(
        z=w, x=labels, y=labels, colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, showscale=scale,
        colorbar={"thickness": 12, "len": 0.9},
        hovertemplate=f"{head_label(layer, head)}: “%{{y}}” → “%{{x}}” %{{z:.3f}}<extra></extra>",
    )  # fmt: skip
    ticks = {"type": "category", "showgrid": False, "fixedrange": True, "tickfont": {"size": size - 5},
             "showticklabels": m <= 24}  # fmt: skip
    fig.update_xaxes(**ticks, tickangle=-60)
    fig.update_yaxes(**ticks, autorange="reversed")
    base_layout(fig, talk=talk, height=360 if talk else 330, grid=False)
    return fig.update_layout(margin={"t": 40}, title={"text": f"query head {head}", "font": {"size": size},
                                                      "x": 0.5, "xanchor": "center"})  # fmt: skip


def window_figure(
    local: np.ndarray, global_: np.ndarray, *, local_layer: int, global_layer: int, window: int, block: int,
    talk: bool = False,
) -> go.Figure:  # fmt: skip
    """A local layer's weights beside a global layer's, both ``(m, m)`` means of ``block``×``block`` tokens:
    the band of the sliding window against the full causal triangle. A dashed line marks the window's edge."""
    a, b = np.asarray(local, dtype=np.float32), np.asarray(global_, dtype=np.float32)
    if a.ndim != 2 or a.shape != b.shape or a.shape[0] != a.shape[1]:
        raise ValueError(f"local and global must be the same (m, m) shape, got {a.shape} and {b.shape}")
    if block < 1 or window < 1:
        raise ValueError("block and window must be positive")
    m = a.shape[0]
    size = font_size(talk)
    titles = [f"L{local_layer}, local:<br>window {window}", f"L{global_layer}, global:<br>full causal"]
    fig = make_subplots(1, 2, horizontal_spacing=0.08, subplot_titles=titles)
    pos = [i * block for i in range(m)]
    # Weights of a long row are small; a square-root scale keeps the band visible (said on the colour bar).
    # Blocked cells (NaN) get a grey layer under the weights, so "may not look" differs from "looks little".
    for col, z in ((1, a), (2, b)):
        fig.add_heatmap(z=np.where(np.isnan(z), 1.0, np.nan), x=pos, y=pos, colorscale=[[0, MASKED], [1, MASKED]],
                        showscale=False, hoverinfo="skip", row=1, col=col)  # fmt: skip
        fig.add_heatmap(
            z=np.sqrt(z), x=pos, y=pos, colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0, showscale=col == 2,
            colorbar={"thickness": 12, "len": 0.9, "title": {"text": "√weight", "side": "right"}},
            customdata=z, row=1, col=col,
            hovertemplate="query %{y}, key %{x}: mean weight %{customdata:.4f}<extra></extra>",
        )  # fmt: skip
    edge = [p for p in pos if p >= window]
    if edge:  # keys older than the window: query i sees keys i − window + 1 … i
        fig.add_scatter(x=[p - window + 1 for p in edge], y=edge, mode="lines", row=1, col=1, showlegend=False,
                        line={"color": HIGHLIGHT, "dash": "dash", "width": 2}, hoverinfo="skip")  # fmt: skip
    fig.update_xaxes(title={"text": "key position"}, fixedrange=True, showgrid=False, range=[-block / 2, m * block])
    fig.update_yaxes(range=[m * block - block / 2, -block / 2], fixedrange=True, showgrid=False)
    fig.update_yaxes(title={"text": "query position"}, row=1, col=1)
    fig.update_annotations(font={"size": size})
    base_layout(fig, talk=talk, height=440, grid=False)
    return fig.update_layout(margin={"t": 80 if talk else 70})


def sink_figure(
    shares: np.ndarray, *, global_layers: Sequence[int] = (), talk: bool = False
) -> go.Figure:
    """Each layer's share of attention on the first token (BOS): a bar per layer (the mean of its heads, local
    blue, global vermillion) and a dot per head."""
    s = np.asarray(shares, dtype=float)
    if s.ndim != 2:
        raise ValueError(f"shares must be (n_layers, H), got shape {s.shape}")
    if s.size and (not np.isfinite(s).all() or s.min() < -1e-9 or s.max() > 1 + 1e-9):
        raise ValueError("shares must be in [0, 1]")
    n_layers, n_heads = s.shape
    _check_layers(global_layers, n_layers)
    x = [f"L{layer}" for layer in range(n_layers)]
    fig = go.Figure()
    for is_global, name, colour in ((False, "local layer (window)", LOCAL), (True, "global layer", GLOBAL)):
        idx = [layer for layer in range(n_layers) if (layer in global_layers) == is_global]
        if idx:
            fig.add_bar(x=[x[i] for i in idx], y=s[idx].mean(axis=1), name=name, marker={"color": colour},
                        opacity=0.75, hovertemplate="%{x}: mean of its heads %{y:.2f}<extra></extra>")  # fmt: skip
    heads = list(np.ndindex(n_layers, n_heads))  # layer-major, as s.reshape(-1)
    fig.add_scatter(x=[x[layer] for layer, _ in heads], y=s.reshape(-1), mode="markers", name="one head",
                    customdata=[head_label(*lh) for lh in heads],
                    marker={"color": "#111111", "size": 7, "symbol": "circle-open"},
                    hovertemplate="%{customdata}: %{y:.2f}<extra></extra>")  # fmt: skip
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=x, fixedrange=True, showgrid=False)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", fixedrange=True,
                     title={"text": "attention on the first token"})  # fmt: skip
    base_layout(fig, talk=talk, height=380 if talk else 340)
    return fig.update_layout(barmode="overlay", legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0})


def blank_blocked(weights: np.ndarray, *, window: int | None = None) -> np.ndarray:
    """Weights ``(..., L, L)`` with the cells a causal mask (and a sliding ``window``) blocks set to NaN,
    so a heatmap leaves them blank instead of drawing a 0 that was never computed."""
    w = np.array(weights, dtype=np.float32)
    n = w.shape[-1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    blocked = j > i
    if window is not None:
        blocked |= j <= i - window
    w[..., blocked] = np.nan
    return w
