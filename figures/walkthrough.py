"""Figures of the walkthrough: matrices as heatmaps, one query's scores and its blend of values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .arrays import as_array
from .style import DIVERGING, HIGHLIGHT, MASKED, SCALED, SEQUENTIAL, UNSCALED, base_layout, font_size

ANNOTATE_MAX = 12  # write the values into the cells up to this many rows and columns


def _cell_text(values: np.ndarray, blocked: np.ndarray | None) -> np.ndarray:
    def fmt(x: float) -> str:
        if np.isneginf(x):
            return "−∞"
        if abs(x - round(x)) < 1e-6 and abs(x) < 1000:
            return f"{round(x):d}".replace("-", "−")
        text = f"{x:.2f}"
        if abs(x) < 1:  # ".94" rather than "0.94": narrower cells stay readable
            text = text.replace("0.", ".", 1)
        return text.replace("-", "−")

    text = np.vectorize(fmt, otypes=[object])(values) if values.size else np.empty(values.shape, dtype=object)
    if blocked is not None:
        text[blocked] = ""  # the grey "blocked" layer writes these cells' label
    return text


def matrix_heatmap(
    values: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str = "",
    kind: str = "signed",
    blocked: np.ndarray | None = None,
    dropped: np.ndarray | None = None,
    highlight_row: int | None = None,
    row_title: str = "",
    col_title: str = "",
    talk: bool = False,
    height: int | None = None,
    colorbar: bool = True,
) -> go.Figure:
    """A labelled matrix. ``kind``: ``"signed"`` (diverging, centred on 0), ``"weights"`` (0…1),
    or ``"plain"`` (diverging, for inputs). ``blocked`` (bool, same shape) greys out and
    labels masked cells "−∞"; ``dropped`` marks cells zeroed by dropout with ×.
    """
    z = as_array(values, float)
    if z.ndim != 2:
        raise ValueError(f"values must be a 2-D matrix, got shape {z.shape}")
    if len(row_labels) != z.shape[0] or len(col_labels) != z.shape[1]:
        raise ValueError(
            f"labels must match the matrix: {z.shape} vs {len(row_labels)} rows, {len(col_labels)} columns"
        )
    blocked_cells = np.isneginf(z) if blocked is None else (as_array(blocked, bool) | np.isneginf(z))
    shown = np.where(blocked_cells, np.nan, z)
    annotate = max(z.shape) <= ANNOTATE_MAX
    blocked_text = "0" if kind == "weights" else "−∞"  # after softmax a blocked cell is an exact zero
    text = _cell_text(z, blocked_cells)
    if dropped is not None:
        text = np.where(as_array(dropped, bool), "×", text)
    if kind == "weights":
        colour = {"colorscale": SEQUENTIAL, "zmin": 0.0, "zmax": 1.0}
    else:
        finite = shown[np.isfinite(shown)]
        bound = float(np.abs(finite).max()) if finite.size else 1.0
        colour = {"colorscale": DIVERGING, "zmin": -bound or -1.0, "zmax": bound or 1.0, "zmid": 0.0}
    size = font_size(talk)
    fig = go.Figure(
        go.Heatmap(
            z=shown,
            x=list(col_labels),
            y=list(row_labels),
            text=text,
            texttemplate="%{text}" if annotate else None,
            textfont={"size": size - (1 if talk else 2)},
            hovertemplate=f"{row_title or 'row'} %{{y}} · {col_title or 'column'} %{{x}}<br>%{{text}}<extra></extra>",
            xgap=2,
            ygap=2,
            colorbar={"thickness": 14, "len": 0.9},
            showscale=colorbar,
            **colour,
        )
    )
    # Masked cells: a grey layer under the heatmap's gaps, so "blocked" reads as "absent".
    if blocked_cells.any():
        grey = np.where(blocked_cells, 1.0, np.nan)
        fig.add_trace(
            go.Heatmap(
                z=grey,
                x=list(col_labels),
                y=list(row_labels),
                colorscale=[[0, MASKED], [1, MASKED]],
                showscale=False,
                text=np.where(blocked_cells, blocked_text, ""),
                texttemplate="%{text}" if annotate else None,
                textfont={"size": size - (1 if talk else 2), "color": "#555555"},
                hovertemplate="masked: may not attend<extra></extra>",
                xgap=2,
                ygap=2,
            )
        )
    n_rows = z.shape[0]
    if highlight_row is not None and 0 <= highlight_row < n_rows:
        fig.add_shape(
            type="rect",
            xref="paper",
            x0=0,
            x1=1,
            yref="y",
            y0=highlight_row - 0.5,
            y1=highlight_row + 0.5,
            line={"color": HIGHLIGHT, "width": 4},
        )
    fig.update_yaxes(autorange="reversed", title_text=row_title, type="category", tickfont={"size": size})
    long_labels = sum(len(str(c)) + 1 for c in col_labels) > 36
    fig.update_xaxes(
        title_text=col_title, type="category", side="top", tickangle=-35 if long_labels else 0, tickfont={"size": size}
    )
    cell = 40
    default_height = max(260, min(520 if talk else 700, 120 + cell * n_rows))
    base_layout(fig, title=title or None, talk=talk, height=height or default_height)
    fig.update_layout(margin={"t": 90 if title else 60})
    fig.update_xaxes(showgrid=False)
    fig.update_yaxes(showgrid=False)
    return fig


def query_scores(
    raw: np.ndarray,
    scaled: np.ndarray,
    key_labels: Sequence[str],
    *,
    scale: float,
    talk: bool = False,
) -> go.Figure:
    """One query's raw scores q·k (unscaled colour) beside the scaled ones (scaled colour)."""
    raw_a, sc_a = as_array(raw, float), as_array(scaled, float)
    fig = go.Figure()
    fig.add_bar(x=list(key_labels), y=raw_a, name="q·k (unscaled)", marker_color=UNSCALED)
    if scale != 1.0:
        fig.add_bar(x=list(key_labels), y=sc_a, name=f"q·k × {scale:.3g} (scaled)", marker_color=SCALED)
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": 1.12, "x": 0})
    fig.update_xaxes(type="category", title_text="key")
    fig.update_yaxes(title_text="score", zeroline=True, zerolinecolor="#999999")
    return base_layout(fig, talk=talk, height=340 if not talk else 420)


def query_weights(
    weights: np.ndarray, key_labels: Sequence[str], *, blocked: np.ndarray | None = None, talk: bool = False
) -> go.Figure:
    """One query's softmax weights as bars, labelled in percent; masked keys marked."""
    w = as_array(weights, float)
    text = [f"{x:.0%}" for x in w]
    if blocked is not None:
        text = ["masked" if b else t for t, b in zip(text, as_array(blocked, bool), strict=True)]
    fig = go.Figure(
        go.Bar(
            x=list(key_labels),
            y=w,
            text=text,
            textposition="outside",
            marker_color=SCALED,
            cliponaxis=False,
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(type="category", title_text="key")
    fig.update_yaxes(title_text="weight", range=[0, 1.12])
    fig.update_layout(uniformtext={"minsize": font_size(talk) - 3, "mode": "show"})
    return base_layout(fig, talk=talk, height=340 if not talk else 420)


def output_blend(
    weights: np.ndarray,
    values: np.ndarray,
    key_labels: Sequence[str],
    *,
    talk: bool = False,
) -> go.Figure:
    """The output row as stacked contributions weight_j · v_j, one colour per key, per feature."""
    w = as_array(weights, float)
    v = as_array(values, float)
    if v.ndim != 2 or v.shape[0] != w.shape[0]:
        raise ValueError(f"values must be (n_k, d_v) with n_k = {w.shape[0]}, got {v.shape}")
    dims = [f"dim {i}" for i in range(v.shape[1])]
    fig = go.Figure()
    palette = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
    for j, label in enumerate(key_labels):
        if w[j] == 0.0:
            continue
        fig.add_bar(
            x=dims,
            y=w[j] * v[j],
            name=f"{label} ({w[j]:.0%})",
            marker_color=palette[j % len(palette)],
            hovertemplate=f"{label}: %{{y:.3f}}<extra></extra>",
        )
    total = w @ v  # (n_k,) @ (n_k, d_v) -> (d_v,)
    fig.add_scatter(
        x=dims, y=total, mode="markers", name="output", marker={"symbol": "diamond", "size": 14, "color": "#111111"}
    )
    fig.update_layout(barmode="relative", legend={"orientation": "v"})
    fig.update_yaxes(title_text="contribution", zeroline=True, zerolinecolor="#999999")
    return base_layout(fig, talk=talk, height=380 if not talk else 460)


def compare_masks(
    left: np.ndarray,
    right: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    left_title: str,
    right_title: str,
    talk: bool = False,
) -> go.Figure:
    """Two weight matrices side by side on one colour scale (0…1)."""
    size = font_size(talk)
    left, right = as_array(left, float), as_array(right, float)
    annotate = max(np.shape(left)) <= ANNOTATE_MAX
    fig = make_subplots(rows=1, cols=2, subplot_titles=(left_title, right_title), horizontal_spacing=0.08)
    for col, z in ((1, left), (2, right)):
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=list(col_labels),
                y=list(row_labels),
                text=np.vectorize(lambda x: f"{x:.2f}")(z),
                texttemplate="%{text}" if annotate else None,
                textfont={"size": size - 2},
                colorscale=SEQUENTIAL,
                zmin=0,
                zmax=1,
                showscale=col == 2,
                xgap=2,
                ygap=2,
                hovertemplate="query %{y} · key %{x}: %{z:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", tickangle=-35)
    n = np.shape(left)[0]
    base_layout(fig, talk=talk, height=max(320, min(720, 140 + 40 * n)))
    fig.update_annotations(font_size=size + 1)
    fig.update_xaxes(showgrid=False)
    fig.update_yaxes(showgrid=False)
    return fig
