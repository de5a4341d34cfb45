"""Cell numbers of heatmaps: labels, their widths, the font that fits, the layout in pixels.

The width table itself is checked where it matters, in the browser: test_browser_layout.py reads
the drawn numbers' boxes and finds none overlapping or clipped.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from figures.cells import (
    CELL_PAD_PX,
    LINE_EM,
    XGAP_PX,
    cell_label,
    cell_labels,
    fit_font,
    heatmap_geometry,
    hover_label,
    text_width_em,
)
from figures.walkthrough import matrix_heatmap


@pytest.mark.parametrize(
    ("x", "label"),
    [
        (-21.1537, "−21.2"),
        (21.15, "21.1"),  # round half to even on the binary value 21.149999…
        (-4.2812, "−4.28"),
        (0.94, ".94"),
        (-0.061, "−.06"),
        (123.456, "123"),
        (-1234.5, "−1234"),  # banker's rounding, as Python's format does
        (3.0, "3"),
        (0.0, "0"),
        (-0.001, ".00"),
        (float("-inf"), "−∞"),
    ],
)
def test_labels_have_about_three_significant_digits(x: float, label: str) -> None:
    assert cell_label(x) == label


@given(st.floats(min_value=-1e5, max_value=1e5, allow_nan=False))
def test_a_label_reads_back_within_its_last_digit(x: float) -> None:
    text = cell_label(x)
    plain = text.replace("−", "-")
    value = float(plain.replace("-.", "-0.") if not plain.startswith(".") else "0" + plain)
    decimals = len(plain.partition(".")[2])
    assert abs(value - x) <= 0.5 * 10**-decimals + 1e-9 * max(1.0, abs(x))
    assert "-" not in text, "labels use a true minus sign"


def test_decimals_fall_as_values_grow() -> None:
    labels = [cell_label(x) for x in (0.51, 9.99, 10.5, 99.3, 100.4, 5000.7)]
    assert labels == [".51", "9.99", "10.5", "99.3", "100", "5001"]  # 2, 2, 1, 1, 0, 0 decimals


def test_hover_keeps_four_significant_digits() -> None:
    assert hover_label(-21.15371) == "−21.15"
    assert hover_label(float("nan")) == "—"


def test_the_font_is_the_largest_that_fits_the_longest_label() -> None:
    longest = text_width_em("−21.2")
    size = fit_font(longest, 80, 40, largest=21, smallest=14)
    assert size is not None
    assert longest * size <= 80 - XGAP_PX - 2 * CELL_PAD_PX
    assert longest * (size + 1) > 80 - XGAP_PX - 2 * CELL_PAD_PX or size == 21 or LINE_EM * (size + 1) > 40 - 5


def test_too_small_a_cell_hides_the_numbers() -> None:
    assert fit_font(text_width_em("−21.2"), 40, 40, largest=21, smallest=14) is None
    assert fit_font(text_width_em("1"), 60, 14, largest=21, smallest=14) is None  # too short a row


@given(
    n_rows=st.integers(1, 16),
    n_cols=st.integers(1, 16),
    width=st.integers(150, 2000),
    height=st.one_of(st.none(), st.integers(150, 1200)),
    scale=st.floats(0.001, 500),
    talk=st.booleans(),
)
def test_geometry_never_lets_a_number_outgrow_its_cell(
    n_rows: int, n_cols: int, width: int, height: int | None, scale: float, talk: bool
) -> None:
    rng = np.random.default_rng(n_rows * 100 + n_cols)
    text = cell_labels(rng.standard_normal((n_rows, n_cols)) * scale).ravel().tolist()
    font = 22 if talk else 15
    geo = heatmap_geometry(
        text, [f"token{i}" for i in range(n_rows)], [str(j) for j in range(n_cols)],
        width=width, height=height, font=font, min_font=14 if talk else 10, row_title=True, col_title=True,
    )  # fmt: skip
    assert geo.cell_h * n_rows + geo.margin["t"] + geo.margin["b"] == pytest.approx(geo.height)
    if geo.annotation_font is not None:
        widest = max(text_width_em(t) for t in text) * geo.annotation_font
        assert widest + 2 * CELL_PAD_PX + XGAP_PX <= geo.cell_w + 1e-9
        assert LINE_EM * geo.annotation_font <= geo.cell_h
        assert (14 if talk else 10) <= geo.annotation_font <= font - 1
    assert geo.row_font * 1.3 <= max(geo.cell_h, 6 * 1.3)


def test_heatmap_sets_its_cell_font_from_its_width() -> None:
    values = np.array([[-21.1537, 4.28], [0.5, -5.93]])
    wide = matrix_heatmap(values, ["a", "b"], ["c", "d"], talk=True, width=1100, height=400)
    narrow = matrix_heatmap(values, ["a", "b"], ["c", "d"], talk=True, width=160, height=400)
    assert wide.data[0].texttemplate == "%{text}"
    assert wide.data[0].textfont.size == 21  # room to spare: the talk font
    assert narrow.data[0].texttemplate is None, "a cell too narrow for “−21.2” shows numbers on hover only"
    assert list(wide.data[0].text.ravel()) == ["−21.2", "4.28", ".50", "−5.93"]
    assert "customdata" in wide.data[0].hovertemplate
    assert wide.layout.margin.pad == 0 and wide.layout.xaxis.automargin is False


def test_sixteen_rows_at_a_projectors_height_hide_the_numbers() -> None:
    values = np.random.default_rng(0).standard_normal((16, 16)) * 3
    labels = [f"t{i}" for i in range(16)]
    fig = matrix_heatmap(values, labels, labels, talk=True, width=1110, height=340)
    assert fig.data[0].texttemplate is None
    assert fig.layout.yaxis.dtick == 1, "every row keeps its label"
    assert fig.layout.yaxis.tickfont.size * 1.3 <= (340 - fig.layout.margin.t - fig.layout.margin.b) / 16 + 1
