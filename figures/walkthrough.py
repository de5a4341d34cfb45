"""Figures of the walkthrough: matrices as heatmaps, one query's scores and its blend of values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .arrays import as_array
from .cells import cell_label, cell_labels, heatmap_geometry, hover_label
from .style import DIVERGING, HIGHLIGHT, MASKED, SCALED, SEQUENTIAL, UNSCALED, base_layout, font_size

# Cell numbers smaller than this are hidden (the value shows on hover): on a projector 14 px is
# about the smallest a back row reads; on a laptop screen 10 px.
MIN_CELL_FONT = {False: 10, True: 14}
# The width a heatmap is laid out for when the page does not say: the main column beside the
# step's text on a laptop (normal mode), the whole main column of a 1280-wide screen (talk mode).
DEFAULT_WIDTH = {False: 640, True: 1180}
# One query's weight bars: with more keys than this a percent label per bar no longer fits (half
# the main column, 16 keys, talk-mode font), so only the largest few are labelled.
LABEL_EVERY_BAR_UP_TO = 10
CROWDED_LABELS = 3
# Okabe-Ito, one colour per key (figures.heads: per K/V group); grey last, apart from the near-black output
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#555555")
MAX_NAMED_COLUMNS = 64  # past this, the column labels would be too small to read: they show on hover only


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
    width: int | None = None,
    height: int | None = None,
    colorbar: bool = True,
) -> go.Figure:
    """A labelled matrix. ``kind``: ``"signed"`` (diverging, centred on 0), ``"weights"`` (0…1),
    or ``"plain"`` (diverging, for inputs). ``blocked`` (bool, same shape) greys out and
    labels masked cells "−∞"; ``dropped`` marks cells zeroed by dropout with ×. ``width`` (the page column's
    pixels) and ``height`` (default: from the rows) size the cells, and so the largest font their numbers fit,
    or none (on hover only) when the cells are too small for a legible one (:mod:`figures.cells`).
    """
    z = as_array(values, float)
    if z.ndim != 2:
        raise ValueError(f"values must be a 2-D matrix, got shape {z.shape}")
    if len(row_labels) != z.shape[0] or len(col_labels) != z.shape[1]:
        raise ValueError(
            f"labels must match the matrix: {z.shape} vs {len(row_labels)} rows, {len(col_labels)} columns"
        )
    if width is not None and width < 50:
        raise ValueError(f"width must be at least 50 px, got {width}")
    blocked_cells = np.isneginf(z) if blocked is None else (as_array(blocked, bool) | np.isneginf(z))
    shown = np.where(blocked_cells, np.nan, z)
    blocked_text = "0" if kind == "weights" else "−∞"  # after softmax a blocked cell is an exact zero
    text = cell_labels(z)
    text[blocked_cells] = ""  # the grey "blocked" layer writes these cells' label
    if dropped is not None:
        text = np.where(as_array(dropped, bool), "×", text)
    hover = np.vectorize(hover_label, otypes=[object])(z)
    if kind == "weights":
        colour = {"colorscale": SEQUENTIAL, "zmin": 0.0, "zmax": 1.0}
    else:
        finite = shown[np.isfinite(shown)]
        bound = float(np.abs(finite).max()) if finite.size else 1.0
        colour = {"colorscale": DIVERGING, "zmin": -bound or -1.0, "zmax": bound or 1.0, "zmid": 0.0}
    bar_labels = [cell_label(colour["zmin"]), cell_label(colour["zmax"]), "−0.00" if colour["zmin"] < 0 else "0.0"]
    size = font_size(talk)
    everything = [*text.ravel().tolist(), *([blocked_text] if blocked_cells.any() else [])]
    # Past MAX_NAMED_COLUMNS (a Gemma head's 256 features) the columns go unlabelled and the axis title says their
    # range on two lines, in the room of one line of (blank) labels and the title's own: one line would be wider
    # than a narrow matrix.
    many = len(col_labels) > MAX_NAMED_COLUMNS
    geo = heatmap_geometry(
        everything, [str(r) for r in row_labels], [""] * len(col_labels) if many else [str(c) for c in col_labels],
        width=width or DEFAULT_WIDTH[talk], height=height, font=size, min_font=MIN_CELL_FONT[talk],
        title=bool(title), row_title=bool(row_title), col_title=bool(col_title) or many, colorbar=colorbar,
        colorbar_labels=bar_labels, natural_cell=44 if talk else 40,
    )  # fmt: skip
    cell_font = geo.annotation_font or size
    template = "%{text}" if geo.annotation_font is not None else None  # None: the numbers show on hover only
    axes = {"x": list(col_labels), "y": list(row_labels), "xgap": 2, "ygap": 2}
    fig = go.Figure(go.Heatmap(
        z=shown, text=text, customdata=hover, texttemplate=template, textfont={"size": cell_font},
        hovertemplate=f"{row_title or 'row'} %{{y}} · {col_title or 'column'} %{{x}}<br>%{{customdata}}<extra></extra>",
        colorbar={"thickness": 14, "len": 0.9}, showscale=colorbar, **axes, **colour,
    ))  # fmt: skip
    # Masked cells: a grey layer under the heatmap's gaps, so "blocked" reads as "absent".
    if blocked_cells.any():
        fig.add_heatmap(
            z=np.where(blocked_cells, 1.0, np.nan), colorscale=[[0, MASKED], [1, MASKED]], showscale=False,
            text=np.where(blocked_cells, blocked_text, ""), texttemplate=template,
            textfont={"size": cell_font, "color": "#555555"}, hovertemplate="masked: may not attend<extra></extra>",
            **axes,
        )  # fmt: skip
    if highlight_row is not None and 0 <= highlight_row < z.shape[0]:
        fig.add_shape(type="rect", xref="paper", x0=0, x1=1, yref="y", y0=highlight_row - 0.5, y1=highlight_row + 0.5,
                      line={"color": HIGHLIGHT, "width": 4})  # fmt: skip
    base_layout(fig, title=title or None, talk=talk, height=geo.height, grid=False)
    # dtick=1: every label, which the geometry has sized to fit (plotly would otherwise drop some). The geometry's
    # margins are exact: automargin would move the plot and break the cells' size.
    fig.update_yaxes(autorange="reversed", title_text=row_title, type="category", dtick=1,
                     tickfont={"size": geo.row_font}, automargin=False)  # fmt: skip
    fig.update_xaxes(
        title_text=f"{col_title or 'column'}<br>0…{len(col_labels) - 1}" if many else col_title, type="category",
        side="top", dtick=1, tickangle=geo.tick_angle, tickfont={"size": geo.col_font}, showticklabels=not many,
        automargin=False,
    )
    return fig.update_layout(margin={**geo.margin, "pad": 0})


def query_scores(
    raw: np.ndarray, scaled: np.ndarray, key_labels: Sequence[str], *, scale: float, talk: bool = False
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
    """One query's softmax weights as bars, labelled in percent (past :data:`LABEL_EVERY_BAR_UP_TO` keys only the
    :data:`CROWDED_LABELS` largest; hover shows every value); masked keys marked ("✕" when crowded)."""
    w = as_array(weights, float)
    mask = np.zeros(w.shape, bool) if blocked is None else as_array(blocked, bool)
    if mask.shape != w.shape:
        raise ValueError(f"blocked must have the weights' shape {w.shape}, got {mask.shape}")
    crowded = w.size > LABEL_EVERY_BAR_UP_TO
    shown = set(range(w.size))
    if crowded:
        order = np.argsort(-np.where(mask, -np.inf, w), kind="stable")
        shown = {int(j) for j in order[:CROWDED_LABELS] if not mask[j] and round(w[j] * 100) > 0}
    text = [("✕" if crowded else "masked") if mask[j] else (f"{w[j]:.0%}" if j in shown else "") for j in range(w.size)]
    hover = ["masked" if b else f"{x:.3f}" for x, b in zip(w, mask, strict=True)]
    fig = go.Figure(go.Bar(
        x=list(key_labels), y=w, text=text, textposition="outside", marker_color=SCALED, cliponaxis=False,
        customdata=hover, hovertemplate="%{x}: %{customdata}<extra></extra>",
    ))  # fmt: skip
    fig.update_xaxes(type="category", title_text="key")
    fig.update_yaxes(title_text="weight", range=[0, 1.12])
    fig.update_layout(uniformtext={"minsize": font_size(talk) - 3, "mode": "show"})
    base_layout(fig, talk=talk, height=340 if not talk else 420)
    if crowded and mask.any():
        # Above the plot, in a top margin of its own: no bar or label can run into the words.
        fig.add_annotation(text="✕ masked key", xref="paper", yref="paper", x=1, y=1, xanchor="right",
                           yanchor="bottom", yshift=4, showarrow=False)  # fmt: skip
        fig.update_layout(margin_t=font_size(talk) + 16)
    return fig


def output_blend(
    weights: np.ndarray, values: np.ndarray, key_labels: Sequence[str], *, talk: bool = False
) -> go.Figure:
    """The output row as stacked contributions weight_j · v_j, one colour per key, per feature."""
    w = as_array(weights, float)
    v = as_array(values, float)
    if v.ndim != 2 or v.shape[0] != w.shape[0]:
        raise ValueError(f"values must be (n_k, d_v) with n_k = {w.shape[0]}, got {v.shape}")
    dims = [f"dim {i}" for i in range(v.shape[1])]
    fig = go.Figure()
    for j, label in enumerate(key_labels):
        if w[j] == 0.0:
            continue
        fig.add_bar(
            x=dims,
            y=w[j] * v[j],
            name=f"{label} ({w[j]:.0%})",
            marker_color=PALETTE[j % len(PALETTE)],
            hovertemplate=f"{label}: %{{y:.3f}}<extra></extra>",
        )
    total = w @ v  # (n_k,) @ (n_k, d_v) -> (d_v,)
    fig.add_scatter(
        x=dims, y=total, mode="markers", name="output", marker={"symbol": "diamond", "size": 14, "color": "#111111"}
    )
    fig.update_layout(barmode="relative", legend={"orientation": "v"})
    fig.update_yaxes(title_text="contribution", zeroline=True, zerolinecolor="#999999")
    return base_layout(fig, talk=talk, height=380 if not talk else 460)
