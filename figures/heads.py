"""Figures of the heads page: the split into heads, each head's weights, who shares K/V, the cache, decoding."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import HIGHLIGHT, SEQUENTIAL, THEORY, base_layout, font_size
from .walkthrough import matrix_heatmap

# Vermillion is the costly baseline (the MHA cache, recomputing every step: as naive on the
# benchmark); green is the saving (the GQA cache, decoding with a cache).
BASELINE = "#D55E00"
SAVING = "#009E73"
# One colour per K/V group, so a query head and the K/V head it reads share a colour.
GROUP_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#555555")


def group_color(kv_head: int) -> str:
    return GROUP_COLORS[kv_head % len(GROUP_COLORS)]


def kilo(tokens: int) -> str:
    """A context length as the axes and sliders show it: 512, 1k, 128k."""
    return f"{tokens // 1024}k" if tokens >= 1024 else str(tokens)


def split_figure(q: np.ndarray, tokens: Sequence[str], n_heads: int, *, talk: bool = False) -> go.Figure:
    """Q ``(L, d_model)`` as a heatmap, cut into ``n_heads`` column blocks, each labelled with its head."""
    z = np.asarray(q, dtype=float)
    if z.ndim != 2 or z.shape[1] % n_heads:
        raise ValueError(f"q must be (L, d_model) with d_model divisible by {n_heads}, got {z.shape}")
    d_k = z.shape[1] // n_heads
    fig = matrix_heatmap(
        z,
        list(tokens),
        [str(i) for i in range(z.shape[1])],
        kind="signed",
        row_title="token",
        col_title="feature of Q",
        talk=talk,
        height=440 if not talk else 560,
    )
    for i in range(n_heads):
        x0, x1 = i * d_k - 0.5, (i + 1) * d_k - 0.5
        fig.add_shape(
            type="rect",
            xref="x",
            yref="paper",
            x0=x0,
            x1=x1,
            y0=-0.02,
            y1=1.0,
            line={"color": group_color(i), "width": 3},
        )
        fig.add_annotation(
            x=(x0 + x1) / 2,
            y=-0.04,
            xref="x",
            yref="paper",
            yanchor="top",
            showarrow=False,
            text=f"<b>head {i}</b>",
            font={"size": font_size(talk), "color": group_color(i)},
        )
    fig.update_layout(margin={"b": 50})
    fig.update_xaxes(showticklabels=z.shape[1] <= 32)
    return fig


def heads_grid(
    weights: np.ndarray,
    tokens: Sequence[str],
    kv_of: Sequence[int],
    *,
    columns: int = 4,
    talk: bool = False,
) -> go.Figure:
    """Each head's ``(L, S)`` weights side by side on one 0…1 colour scale; ``weights`` is ``(h, L, S)``.

    A head's title names the K/V head it reads (``kv_of[i]``) in that group's colour.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 3 or len(kv_of) != w.shape[0]:
        raise ValueError(f"weights must be (h, L, S) with one K/V index per head, got {w.shape} and {len(kv_of)}")
    h, L, _ = w.shape
    cols = min(columns, h)
    rows = math.ceil(h / cols)
    grouped = len(set(kv_of)) < h
    titles = [
        f"<span style='color:{group_color(kv_of[i])}'><b>head {i}</b>"
        + (f" · K/V {kv_of[i]}" if grouped else "")
        + "</span>"
        for i in range(h)
    ]
    fig = make_subplots(
        rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.03, vertical_spacing=0.12 if rows > 1 else 0.0
    )
    size = font_size(talk)
    annotate = h <= 2 and L <= 12
    for i in range(h):
        r, c = divmod(i, cols)
        fig.add_trace(
            go.Heatmap(
                z=w[i],
                x=list(tokens),
                y=list(tokens),
                zmin=0.0,
                zmax=1.0,
                colorscale=SEQUENTIAL,
                showscale=i == 0,
                colorbar={"thickness": 12, "len": 0.8},
                text=np.vectorize(lambda x: f"{x:.2f}".replace("0.", ".", 1))(w[i]),
                texttemplate="%{text}" if annotate else None,
                textfont={"size": size - 3},
                xgap=1,
                ygap=1,
                hovertemplate=f"head {i}<br>query %{{y}} → key %{{x}}: %{{z:.3f}}<extra></extra>",
            ),
            row=r + 1,
            col=c + 1,
        )
    ticks = {"size": size - (2 if talk else 3)}
    fig.update_yaxes(autorange="reversed", type="category", showgrid=False, tickfont=ticks)
    fig.update_xaxes(type="category", showgrid=False, tickangle=-60, tickfont=ticks)
    show_labels = cols <= 4 and not (talk and cols > 2)
    for i in range(h):
        r, c = divmod(i, cols)
        fig.update_yaxes(showticklabels=c == 0, row=r + 1, col=c + 1)
        fig.update_xaxes(showticklabels=show_labels and r == rows - 1, row=r + 1, col=c + 1)  # keys: bottom row only
    per_row = 300 if cols > 2 else (440 if talk else 380)
    base_layout(fig, talk=talk, height=min(900, 90 + per_row * rows + (40 if show_labels else 0)))
    fig.update_annotations(font_size=size)
    fig.update_layout(margin={"t": 50})
    return fig


def sharing_figure(n_heads: int, n_kv_heads: int, talk: bool = False) -> go.Figure:
    """Query heads on top, K/V heads below, a line from each query head to the K/V head it reads."""
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads ({n_kv_heads}) must divide n_heads ({n_heads})")
    group = n_heads // n_kv_heads
    size = font_size(talk)
    fig = go.Figure()
    q_x = np.arange(n_heads, dtype=float)
    kv_x = np.array([j * group + (group - 1) / 2 for j in range(n_kv_heads)])  # centred under its group
    for i in range(n_heads):
        j = i // group
        fig.add_trace(
            go.Scatter(
                x=[q_x[i], kv_x[j]],
                y=[1, 0],
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                line={"color": group_color(j), "width": 3},
            )
        )
    fig.add_trace(
        go.Scatter(
            x=q_x,
            y=np.ones(n_heads),
            mode="markers+text",
            showlegend=False,
            marker={
                "symbol": "square",
                "size": 40 if not talk else 46,
                "color": [group_color(i // group) for i in range(n_heads)],
            },
            text=[f"Q{i}" for i in range(n_heads)],
            textfont={"color": "white", "size": size - 1},
            hovertemplate="query head %{text}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=kv_x,
            y=np.zeros(n_kv_heads),
            mode="markers+text",
            showlegend=False,
            marker={
                "symbol": "square",
                "size": 48 if not talk else 54,
                "color": [group_color(j) for j in range(n_kv_heads)],
                "line": {"color": "#111111", "width": 2},
            },
            text=[f"KV{j}" for j in range(n_kv_heads)],
            textfont={"color": "white", "size": size - 2},
            hovertemplate="K/V head %{text}<extra></extra>",
        )
    )
    fig.update_xaxes(visible=False, range=[-0.7, n_heads - 0.3])
    fig.update_yaxes(
        tickvals=[0, 1],
        ticktext=["K/V heads", "query heads"],
        range=[-0.45, 1.45],
        showgrid=False,
        tickfont={"size": size},
    )
    base_layout(fig, talk=talk, height=230 if not talk else 250)
    fig.update_layout(margin={"l": 10, "r": 10, "t": 10, "b": 10})
    return fig


def kv_cache_figure(
    contexts: Sequence[int],
    mha_bytes: Sequence[int],
    gqa_bytes: Sequence[int],
    *,
    chosen: int,
    budget_bytes: float | None,
    model: str,
    n_heads: int,
    n_kv_heads: int,
    talk: bool = False,
) -> go.Figure:
    """Cache size against context (log-log) for the MHA twin and the model itself, with the memory left."""
    gib = 2**30
    fig = go.Figure()
    fig.add_scatter(
        x=list(contexts),
        y=[b / gib for b in mha_bytes],
        mode="lines+markers",
        name=f"MHA: {n_heads} K/V heads",
        line={"color": BASELINE, "width": 3},
    )
    if n_kv_heads != n_heads:
        fig.add_scatter(
            x=list(contexts),
            y=[b / gib for b in gqa_bytes],
            mode="lines+markers",
            name=f"{model}: {n_kv_heads} K/V heads",
            line={"color": SAVING, "width": 3},
        )
    if budget_bytes is not None and budget_bytes > 0:  # traces, not shapes: shapes on log axes take log10 values
        fig.add_scatter(
            x=[contexts[0], contexts[-1]],
            y=[budget_bytes / gib] * 2,
            mode="lines",
            name="memory left for the cache",
            line={"color": THEORY, "dash": "dash", "width": 2},
            hoverinfo="skip",
        )
    idx = list(contexts).index(chosen) if chosen in contexts else None
    if idx is not None:
        marks = [mha_bytes[idx]] + ([gqa_bytes[idx]] if n_kv_heads != n_heads else [])
        fig.add_scatter(
            x=[chosen] * len(marks),
            y=[b / gib for b in marks],
            mode="markers",
            name="your context",
            marker={"color": HIGHLIGHT, "size": 16, "symbol": "circle-open", "line": {"width": 4}},
            hovertemplate="%{y:.3g} GiB<extra></extra>",
        )
    fig.update_xaxes(
        type="log",
        title_text="context (tokens)",
        tickvals=list(contexts),
        ticktext=[f"{c // 1024}k" if c >= 1024 else str(c) for c in contexts],
    )
    fig.update_yaxes(type="log", title_text="KV cache (GiB)", dtick=1)
    fig.update_layout(legend={"orientation": "h", "y": 1.02, "x": 0, "yanchor": "bottom"})
    base_layout(fig, talk=talk, height=400 if not talk else 460)
    return fig.update_layout(margin={"t": 110 if talk else 70})


def decode_timing_figure(
    cached: tuple[Sequence[int], Sequence[float]],
    recompute: tuple[Sequence[int], Sequence[float]],
    fits: dict[str, tuple[float, float, int, int] | None],
    *,
    talk: bool = False,
) -> go.Figure:
    """Milliseconds per decoding step against context (log-log), with each fitted power law dashed."""
    fig = go.Figure()
    series = (
        ("cached", "with a KV cache", SAVING, cached),
        ("recompute", "recomputing everything", BASELINE, recompute),
    )
    for key, label, colour, (xs, ys) in series:
        if not xs:
            continue
        fit = fits.get(key)
        name = label + (f" (slope {fit[0]:.2f})" if fit else "")
        fig.add_scatter(
            x=list(xs),
            y=[1e3 * t for t in ys],
            mode="lines+markers",
            name=name,
            line={"color": colour, "width": 3},
            marker={"size": 9},
            hovertemplate="t = %{x}: %{y:.3g} ms per step<extra></extra>",
        )
        if fit:
            slope, intercept, t0, t1 = fit
            tt = np.geomspace(t0, t1, 20)
            fig.add_scatter(
                x=tt,
                y=1e3 * np.exp(intercept) * tt**slope,
                mode="lines",
                showlegend=False,
                line={"color": colour, "width": 6, "dash": "dot"},
                opacity=0.45,
                hoverinfo="skip",
            )
    xs_all = sorted({*cached[0], *recompute[0]})
    fig.update_xaxes(
        type="log",
        title_text="context t (tokens already generated)",
        tickvals=xs_all,
        ticktext=[f"{x // 1024}k" if x >= 1024 else str(x) for x in xs_all],
    )
    fig.update_yaxes(type="log", title_text="ms per generated token", dtick=1)  # one tick per power of 10
    fig.update_layout(legend={"orientation": "h", "y": 1.02, "x": 0, "yanchor": "bottom"})
    base_layout(fig, talk=talk, height=420 if not talk else 470)
    return fig.update_layout(margin={"t": 110 if talk else 70})


def decode_steps_figure(
    weights: Sequence[np.ndarray], tokens: Sequence[str], step: int, head: int, *, talk: bool = False
) -> go.Figure:
    """The rows decoded so far for one head: row t is step t's weights over the t + 1 cached keys.

    Keys not yet generated are greyed; the newest row is outlined.
    """
    L = len(tokens)
    if not 0 <= step < L or len(weights) < step + 1:
        raise ValueError(f"step must be in 0…{L - 1} with that many decoded rows, got {step}")
    z = np.zeros((step + 1, L))
    for t in range(step + 1):
        z[t, : t + 1] = np.asarray(weights[t], dtype=float)[head]
    future = np.arange(L)[None, :] > np.arange(step + 1)[:, None]  # (rows, L): keys not yet cached
    fig = matrix_heatmap(
        z,
        list(tokens[: step + 1]),
        list(tokens),
        kind="weights",
        blocked=future,
        highlight_row=step,
        row_title="step (new token)",
        col_title="cached key",
        talk=talk,
        height=max(300, min(560, 150 + 38 * (step + 1))),
    )
    return fig
