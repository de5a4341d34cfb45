"""One look across pages: colours, fonts and the layout every figure starts from.

A colour means the same thing on every page (``SCALED`` on the walkthrough and the explorer, ``IMPL_COLORS``
per benchmark entry), from the Okabe-Ito palette, distinct under colour blindness and on a washed-out projector.
"""

from __future__ import annotations

import plotly.graph_objects as go

UNSCALED = "#D55E00"  # vermillion: raw QKᵀ, no ÷√d_k
SCALED = "#0072B2"  # blue: ÷√d_k
THEORY = "#444444"  # theory lines
MASKED = "#BBBBBB"  # blocked cells
HIGHLIGHT = "#E69F00"  # the chosen query / selected row
IMPL_COLORS = {
    "textbook": "#D55E00",
    "trace": "#882255",  # wine: a darker kin of textbook's vermillion (both keep the n×n matrix)
    "sdpa": "#0072B2",
    "sdpa-math": "#56B4E9",
    "sdpa-flash": "#009E73",
    "sdpa-efficient": "#CC79A7",
    "sdpa-cudnn": "#F0E442",
    "tiled": "#E69F00",
    "numpy": "#555555",
    # The efficient routes (Beyond n²), from Paul Tol's muted palette, also colour-blind safe.
    "sdpa-masked": "#332288",  # indigo: SDPA's kin, with the window as a dense mask
    "flex-window": "#117733",
    "linear": "#CC6677",
    "performer": "#AA4499",
    "linformer": "#999933",
}
SEQUENTIAL = "Blues"  # weights in [0, 1]
DIVERGING = "RdBu_r"  # signed scores, centred on 0

BASE_FONT = 15
TALK_FONT = 22


def font_size(talk: bool) -> int:
    """Axis and label font size: larger in talk mode so the back row can read it."""
    return TALK_FONT if talk else BASE_FONT


def base_layout(
    fig: go.Figure, *, title: str | None = None, talk: bool = False, height: int | None = None, grid: bool = True
) -> go.Figure:
    """Apply the shared fonts, margins and white background to ``fig`` and return it; ``grid=False`` for
    heatmaps, whose cells are the grid."""
    size = font_size(talk)
    fig.update_layout(
        title={"text": title, "font": {"size": size + 3}} if title else None,
        font={"family": "Inter, 'Source Sans Pro', 'DejaVu Sans', sans-serif", "size": size, "color": "#111111"},
        paper_bgcolor="white",
        plot_bgcolor="white",
        margin={"l": 10, "r": 10, "t": 60 if title else 20, "b": 10},
        legend={"font": {"size": size}},
        hoverlabel={"font": {"size": size}},
    )
    if height is not None:
        fig.update_layout(height=height)
    fig.update_xaxes(showgrid=grid, gridcolor="#E5E5E5", zeroline=False, automargin=True)
    fig.update_yaxes(showgrid=grid, gridcolor="#E5E5E5", zeroline=False, automargin=True)
    return fig


def chart_layout(
    fig: go.Figure, *, talk: bool, height: int, top: int = 40, legend: dict | None = None, note_size: int = 0
) -> go.Figure:
    """:func:`base_layout` with the axes', legend's and annotations' fonts set too (Streamlit's chart theme would
    shrink them); ``top`` is the top margin, ``note_size`` the annotations' size against the labels'."""
    size = font_size(talk)
    base_layout(fig, talk=talk, height=height)
    fig.update_xaxes(tickfont={"size": size - 2}, title_font={"size": size - 2})
    fig.update_yaxes(tickfont={"size": size - 2}, title_font={"size": size - 2})
    fig.update_annotations(font={"size": size + note_size})
    return fig.update_layout(margin={"t": top}, legend={"font": {"size": size - 3}, **(legend or {})})


# Passed as st.plotly_chart(fig, config=PLOTLY_CONFIG): no plotly logo, a clean mode bar.
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
