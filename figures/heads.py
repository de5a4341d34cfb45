"""Figures of the heads page: the split into heads, each head's weights, who shares K/V, the cache, decoding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from .cells import cell_labels
from .style import HIGHLIGHT, SEQUENTIAL, THEORY, base_layout, font_size
from .walkthrough import PALETTE, matrix_heatmap

if TYPE_CHECKING:  # figures stay torch-free
    from attention_core.kv_cache import DecodeTiming

# Vermillion is the costly baseline (the MHA cache, recomputing every step: as textbook on the
# benchmark); green is the saving (the GQA cache, decoding with a cache).
BASELINE = "#D55E00"
SAVING = "#009E73"


def group_color(kv_head: int) -> str:
    """One colour per K/V group, so a query head and the K/V head it reads share a colour."""
    return PALETTE[kv_head % len(PALETTE)]


def kilo(tokens: int) -> str:
    """A context length as the axes and sliders show it: 512, 1k, 128k."""
    return f"{tokens // 1024}k" if tokens >= 1024 else str(tokens)


def split_figure(q: np.ndarray, tokens: Sequence[str], n_heads: int, *, talk: bool = False) -> go.Figure:
    """Q ``(L, d_model)`` as a heatmap, cut into ``n_heads`` column blocks, each labelled ``h0``, ``h1``, … below."""
    z = np.asarray(q, dtype=float)
    if z.ndim != 2 or z.shape[1] % n_heads:
        raise ValueError(f"q must be (L, d_model) with d_model divisible by {n_heads}, got {z.shape}")
    d_k = z.shape[1] // n_heads
    fig = matrix_heatmap(z, list(tokens), [str(i) for i in range(z.shape[1])], kind="signed", row_title="token",
                         col_title="feature of Q", talk=talk, height=560 if talk else 440)  # fmt: skip
    for i in range(n_heads):
        x0, x1, color = i * d_k - 0.5, (i + 1) * d_k - 0.5, group_color(i)
        fig.add_shape(type="rect", xref="x", yref="paper", x0=x0, x1=x1, y0=-0.02, y1=1.0,
                      line={"color": color, "width": 3})  # fmt: skip
        # "h0", not "head 0": a phone gives a head of 8 features about 40 px; the hover names it in full.
        fig.add_annotation(x=(x0 + x1) / 2, y=-0.04, xref="x", yref="paper", yanchor="top", showarrow=False,
                           text=f"<b>h{i}</b>", font={"size": font_size(talk), "color": color},
                           hovertext=f"head {i}: features {i * d_k}–{(i + 1) * d_k - 1} of Q")  # fmt: skip
    fig.update_layout(margin={"b": 50})
    # Four feature numbers, level: eight (every 4th of 32) piled up on a phone.
    step = max(1, z.shape[1] // 4)
    fig.update_xaxes(tickvals=[str(i) for i in range(0, z.shape[1], step)], tickangle=0)
    return fig


def head_heatmap(
    weights: np.ndarray, tokens: Sequence[str], head: int, kv_head: int, *, grouped: bool = False,
    colorbar: bool = False, numbers: bool = False, row_labels: bool = True, col_labels: bool = True,
    height: int | None = None, talk: bool = False,
) -> go.Figure:
    """One head's ``(L, S)`` weights on the 0…1 colour scale all heads share, titled ``head i`` (with ``· K/V j`` when
    ``grouped``) in its K/V group's colour; ``colorbar`` draws the shared scale's bar, ``numbers`` writes each weight
    in its cell (up to 12 tokens); ``row_labels=False`` leaves the query tokens to the panel on the left,
    ``col_labels=False`` the keys to the panel below."""
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.shape[0] != len(tokens) or w.shape[1] != len(tokens):
        raise ValueError(f"weights must be (L, S) with one token per row and column, got {w.shape} for {len(tokens)}")
    L = w.shape[0]
    size = font_size(talk)
    kv = f" · K/V {kv_head}" if grouped else ""
    title = f"<span style='color:{group_color(kv_head)}'><b>head {head}</b>{kv}</span>"
    fig = go.Figure(go.Heatmap(
        z=w, x=list(tokens), y=list(tokens), zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL, showscale=colorbar,
        colorbar={"thickness": 12, "len": 0.9}, xgap=1, ygap=1, text=cell_labels(w),
        texttemplate="%{text}" if numbers and L <= 12 else None, textfont={"size": size - 3},
        hovertemplate=f"head {head}<br>query %{{y}} → key %{{x}}: %{{z:.3f}}<extra></extra>",
    ))  # fmt: skip
    # Every token named where the panel has the room (plotly would skip every other one); a low one: thinned.
    every = {} if (height or 300) < 260 else {"tickvals": list(tokens)}
    ticks = {"tickfont": {"size": size - (4 if talk else 3)}} | every
    fig.update_yaxes(autorange="reversed", type="category", showgrid=False, showticklabels=row_labels, **ticks)
    fig.update_xaxes(type="category", showgrid=False, showticklabels=col_labels, tickangle=-60, **ticks)
    base_layout(fig, talk=talk, height=height or (440 if talk else 380), grid=False)
    return fig.update_layout(title={"text": title, "x": 0.5, "xanchor": "center", "font": {"size": size}},
                             margin={"t": 40, "l": 10, "r": 10})  # fmt: skip


def sharing_figure(n_heads: int, n_kv_heads: int, talk: bool = False) -> go.Figure:
    """Query heads on top, K/V heads below, a line from each query head to the K/V head it reads."""
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads ({n_kv_heads}) must divide n_heads ({n_heads})")
    group = n_heads // n_kv_heads
    size = font_size(talk)
    kv_x = [j * group + (group - 1) / 2 for j in range(n_kv_heads)]  # each K/V head centred under its group
    fig = go.Figure()
    for i in range(n_heads):
        fig.add_scatter(x=[i, kv_x[i // group]], y=[1, 0], mode="lines", hoverinfo="skip", showlegend=False,
                        line={"color": group_color(i // group), "width": 3})  # fmt: skip
    rows = (  # y, where the boxes go, their names, their K/V groups, box and text size, outline, what they are
        (1, list(range(n_heads)), "Q", [i // group for i in range(n_heads)], 40, size - 1, {}, "query head"),
        (0, kv_x, "KV", list(range(n_kv_heads)), 48, size - 2, {"color": "#111111", "width": 2}, "K/V head"),
    )
    for y, xs, prefix, groups, box, text, outline, what in rows:
        fig.add_scatter(
            x=xs, y=[y] * len(xs), mode="markers+text", showlegend=False, text=[f"{prefix}{k}" for k in range(len(xs))],
            marker={"symbol": "square", "size": box + (6 if talk else 0), "line": outline,
                    "color": [group_color(j) for j in groups]},
            textfont={"color": "white", "size": text}, hovertemplate=f"{what} %{{text}}<extra></extra>",
        )  # fmt: skip
    fig.update_xaxes(visible=False, range=[-0.7, n_heads - 0.3])
    fig.update_yaxes(tickvals=[0, 1], ticktext=["K/V heads", "query heads"], range=[-0.45, 1.45], showgrid=False,
                     tickfont={"size": size})  # fmt: skip
    base_layout(fig, talk=talk, height=250 if talk else 230)
    return fig.update_layout(margin={"l": 10, "r": 10, "t": 10, "b": 10})


def _log_log(fig: go.Figure, ticks: Sequence[int], x_title: str, y_title: str, height: int, talk: bool) -> go.Figure:
    """Both axes logarithmic (one y tick per power of 10), x ticked at ``ticks``, the legend above the plot."""
    fig.update_xaxes(type="log", title_text=x_title, tickvals=list(ticks), ticktext=[kilo(t) for t in ticks])
    fig.update_yaxes(type="log", title_text=y_title, dtick=1)
    fig.update_layout(legend={"orientation": "h", "y": 1.02, "x": 0, "yanchor": "bottom"})
    base_layout(fig, talk=talk, height=height)
    return fig.update_layout(margin={"t": 110 if talk else 70})


def kv_cache_figure(
    contexts: Sequence[int], mha_bytes: Sequence[int], gqa_bytes: Sequence[int], *, chosen: int,
    budget_bytes: float | None, model: str, n_heads: int, n_kv_heads: int, talk: bool = False,
) -> go.Figure:  # fmt: skip
    """Cache size against context (log-log) for the MHA twin and the model itself, with the memory left (if any)."""
    gib, x = 2**30, list(contexts)
    fig = go.Figure()
    fig.add_scatter(x=x, y=[b / gib for b in mha_bytes], mode="lines+markers", name=f"MHA: {n_heads} K/V heads",
                    line={"color": BASELINE, "width": 3})  # fmt: skip
    if n_kv_heads != n_heads:
        fig.add_scatter(x=x, y=[b / gib for b in gqa_bytes], mode="lines+markers",
                        name=f"{model}: {n_kv_heads} K/V heads", line={"color": SAVING, "width": 3})  # fmt: skip
    if budget_bytes is not None and budget_bytes > 0:  # traces, not shapes: shapes on log axes take log10 values
        fig.add_scatter(x=[x[0], x[-1]], y=[budget_bytes / gib] * 2, mode="lines", name="memory left for the cache",
                        line={"color": THEORY, "dash": "dash", "width": 2}, hoverinfo="skip")  # fmt: skip
    if chosen in x:
        i = x.index(chosen)
        marks = [mha_bytes[i]] + ([gqa_bytes[i]] if n_kv_heads != n_heads else [])
        fig.add_scatter(x=[chosen] * len(marks), y=[b / gib for b in marks], mode="markers", name="your context",
                        marker={"color": HIGHLIGHT, "size": 16, "symbol": "circle-open", "line": {"width": 4}},
                        hovertemplate="%{y:.3g} GiB<extra></extra>")  # fmt: skip
    return _log_log(fig, x, "context (tokens)", "KV cache (GiB)", 460 if talk else 400, talk)


def decode_timing_figure(timing: DecodeTiming, *, talk: bool = False) -> go.Figure:
    """Milliseconds per decoding step against context (log-log), with each fitted power law dashed."""
    fig = go.Figure()
    for key, label, colour in (
        ("cached", "with a KV cache", SAVING), ("recompute", "recomputing everything", BASELINE)
    ):
        xs, ys = timing.points(key)
        if not xs:
            continue
        fit = timing.fit(key)
        fig.add_scatter(x=list(xs), y=[1e3 * t for t in ys], mode="lines+markers", marker={"size": 9},
                        name=label + (f" (slope {fit[0]:.2f})" if fit else ""), line={"color": colour, "width": 3},
                        hovertemplate="t = %{x}: %{y:.3g} ms per step<extra></extra>")  # fmt: skip
        if fit:
            slope, intercept, t0, t1 = fit
            tt = np.geomspace(t0, t1, 20)
            fig.add_scatter(x=tt, y=1e3 * np.exp(intercept) * tt**slope, mode="lines", showlegend=False, opacity=0.45,
                            line={"color": colour, "width": 6, "dash": "dot"}, hoverinfo="skip")  # fmt: skip
    ticks = timing.points("cached")[0]  # recomputing is measured only where the cached step was
    return _log_log(fig, ticks, "context t (tokens already generated)", "ms per generated token", 470 if talk else 420,
                    talk)  # fmt: skip


def decode_steps_figure(
    weights: Sequence[np.ndarray], tokens: Sequence[str], step: int, head: int, *, talk: bool = False,
    max_height: int = 560,
) -> go.Figure:  # fmt: skip
    """The rows decoded so far for one head: row t is step t's weights over the t + 1 cached keys.

    Keys not yet generated are greyed; the newest row is outlined. The cells' numbers are sized for
    the height, at most ``max_height`` (the room a projector leaves).
    """
    L = len(tokens)
    if not 0 <= step < L or len(weights) < step + 1:
        raise ValueError(f"step must be in 0…{L - 1} with that many decoded rows, got {step}")
    z = np.zeros((step + 1, L))
    for t in range(step + 1):
        z[t, : t + 1] = np.asarray(weights[t], dtype=float)[head]
    future = np.arange(L)[None, :] > np.arange(step + 1)[:, None]  # (rows, L): keys not yet cached
    return matrix_heatmap(z, list(tokens[: step + 1]), list(tokens), kind="weights", blocked=future,
                          highlight_row=step, row_title="step (new token)", col_title="cached key", talk=talk,
                          height=max(300, min(max_height, 150 + 38 * (step + 1))))  # fmt: skip
