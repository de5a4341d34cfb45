"""Numbers written into heatmap cells: legible or absent, never overlapping.

A heatmap's cell is a box of known pixels once the figure's size and margins are fixed, so the
largest font at which the longest label of the matrix fits its cell can be computed before the
figure is drawn. Below a legible minimum the numbers are left out (the value shows on hover).

Widths are in em (a multiple of the font size), measured for DejaVu Sans, the widest of the
fonts the figures ask for (Inter and Source Sans are narrower), so a label sized here fits in
whichever of them the browser has.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# DejaVu Sans advance widths, in em.
_EM = {
    **dict.fromkeys("0123456789", 0.636),
    ".": 0.318, ",": 0.318, "−": 0.838, "-": 0.361, "+": 0.838, "×": 0.838, "∞": 0.833, "%": 0.950,
    " ": 0.318, "'": 0.275, "’": 0.318, "e": 0.615, "i": 0.278, "l": 0.278, "t": 0.392, "r": 0.411,
    "f": 0.352, "j": 0.278, "m": 0.974, "w": 0.818, "W": 0.989, "M": 0.863,
}
_EM_DEFAULT = 0.65  # other letters
_EM_UPPER = 0.72
LINE_EM = 1.2  # a line of text is about 1.2 em tall

CELL_PAD_PX = 3  # clear space on each side of a label inside its cell
XGAP_PX = 2  # the white gap plotly draws between cells (xgap=ygap=2)
TICK_ROOM_PX = 14  # tick (5 px), plotly's gap to the label, and a little air


def text_width_em(text: str) -> float:
    """Width of ``text`` in em (multiply by the font size in px for pixels)."""
    return sum(_EM.get(c, _EM_UPPER if c.isupper() else _EM_DEFAULT) for c in str(text))


def longest_em(labels: Iterable[str]) -> float:
    """The width in em of the widest label (0 for none)."""
    return max((text_width_em(t) for t in labels), default=0.0)


def cell_label(x: float) -> str:
    """A cell's label: adaptive decimals, a true minus sign, ".94" rather than "0.94", "−∞" for −∞."""
    if math.isnan(x):
        return ""
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if abs(x - round(x)) < 1e-6 and abs(x) < 1e6:
        return f"{round(x):d}".replace("-", "−")
    d = 0 if abs(x) >= 100 else 1 if abs(x) >= 10 else 2  # about 3 significant digits
    text = f"{x:.{d}f}"
    if text in ("-0", "-0.0", "-0.00"):
        text = text[1:]
    if abs(x) < 1:  # narrower cells stay readable
        text = text.replace("0.", ".", 1)
    return text.replace("-", "−")


def cell_labels(values: np.ndarray) -> np.ndarray:
    """:func:`cell_label` of every entry, as an object array of the same shape."""
    return np.vectorize(cell_label, otypes=[object])(np.asarray(values, dtype=float))


def hover_label(x: float) -> str:
    """The value on hover: 4 significant digits, whatever the cell shows ("—" for NaN)."""
    if not math.isfinite(x):
        return cell_label(x) or "—"
    return f"{x:.4g}".replace("-", "−")


def fit_font(longest_label_em: float, cell_w_px: float, cell_h_px: float, *, largest: int, smallest: int) -> int | None:
    """The largest whole font size (px, ≤ ``largest``) at which a label ``longest_label_em`` wide fits a cell.

    ``None`` when even ``smallest`` does not fit: the numbers should then be hidden.
    """
    if longest_label_em <= 0:
        return largest
    room_w = cell_w_px - XGAP_PX - 2 * CELL_PAD_PX
    room_h = cell_h_px - XGAP_PX - CELL_PAD_PX
    if room_w <= 0 or room_h <= 0:
        return None
    size = math.floor(min(largest, room_w / longest_label_em, room_h / LINE_EM))
    return size if size >= smallest else None


@dataclass(frozen=True)
class HeatmapGeometry:
    """Pixel layout of one heatmap: the figure's height, its margins (plotly's ``l``, ``r``, ``t``, ``b``), its
    cells, and how its text is set."""

    height: int
    margin: dict[str, int]
    cell_w: float
    cell_h: float
    tick_angle: int  # 0, or −45 when the column labels do not fit a cell level
    row_font: int  # row labels: no taller than a row
    col_font: int  # column labels
    annotation_font: int | None  # None: the cells are too small, numbers on hover only


def heatmap_geometry(
    cell_text: Sequence[str],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    width: int,
    height: int | None = None,
    font: int,
    min_font: int,
    title: bool = False,
    row_title: bool = False,
    col_title: bool = False,
    colorbar: bool = True,
    colorbar_labels: Sequence[str] = ("−0.00",),
    natural_cell: int = 40,
) -> HeatmapGeometry:
    """Lay out a heatmap ``width`` px wide: margins from its labels, cells from what is left.

    ``height`` fixes the figure's height; ``None`` asks for ``natural_cell`` px per row. The
    cell numbers get the largest font up to ``font − 1`` that fits their longest label, or are
    hidden when that is under ``min_font``.
    """
    n_rows, n_cols = max(1, len(row_labels)), max(1, len(col_labels))
    # Left: the widest row label, the tick, and the axis title set vertically beside them.
    # Margins are exact (the figure turns plotly's automargin off and its pad to 0), so each holds
    # its labels plus the tick (5 px) and plotly's gap between tick and label.
    margin_l = math.ceil(longest_em(row_labels) * font + TICK_ROOM_PX + (LINE_EM * font + 6 if row_title else 0)) + 4
    margin_r = 8
    if colorbar:  # bar, tick labels, padding: plotly puts the colour bar in the right margin
        margin_r += math.ceil(14 + 12 + longest_em(colorbar_labels) * font + 10)
    plot_w = max(1.0, width - margin_l - margin_r)
    cell_w = plot_w / n_cols
    # Column labels: level if they fit their cell at no less than 3/4 of the font, else at 45°.
    col_em = longest_em(col_labels)
    level_font = math.floor(min(font, (cell_w - 6) / col_em)) if col_em > 0 else font
    if level_font >= max(min_font, math.ceil(0.75 * font)):
        col_font, tick_angle = level_font, 0
        ticks_h = LINE_EM * col_font + TICK_ROOM_PX
    else:  # a label at 45°: its width and its line height both project onto the vertical
        col_font, tick_angle = font, -45
        ticks_h = (col_em * col_font + LINE_EM * col_font) * math.sqrt(0.5) + TICK_ROOM_PX
        # The last label leans right, past the plot's edge: the right margin holds it (a colour bar's already does).
        overhang = math.ceil((text_width_em(col_labels[-1]) + LINE_EM) * col_font * math.sqrt(0.5) - cell_w / 2)
        if overhang > margin_r:
            margin_r = overhang
            cell_w = max(1.0, width - margin_l - margin_r) / n_cols
    title_h = LINE_EM * (font + 3) + 14 if title else 4
    margin_t = math.ceil(ticks_h + (LINE_EM * font + 4 if col_title else 0) + title_h)
    margin_b = 10
    if height is None:
        height = math.ceil(margin_t + margin_b + natural_cell * n_rows)
    height = max(200, int(height))
    cell_h = max(1.0, height - margin_t - margin_b) / n_rows
    # Row labels: no taller than a row, or plotly would drop every other one.
    row_font = max(6, min(font, math.floor(cell_h / 1.3)))
    ann = fit_font(longest_em(cell_text), cell_w, cell_h, largest=font - 1, smallest=min_font)
    return HeatmapGeometry(
        height=height, margin={"l": margin_l, "r": margin_r, "t": margin_t, "b": margin_b}, cell_w=cell_w,
        cell_h=cell_h, tick_angle=tick_angle, row_font=row_font, col_font=col_font, annotation_font=ann,
    )  # fmt: skip
