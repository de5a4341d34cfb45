"""The Beyond n² page's figure builders, called directly with hand-made data."""

from __future__ import annotations

import numpy as np
import pytest

from figures.efficient import error_figure, spectrum_figure, tiles_figure, tokens_figure, weights_figure
from figures.style import IMPL_COLORS, THEORY


def band(n: int, w: int) -> np.ndarray:
    return np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= w


def test_the_pattern_panels_draw_tokens_with_the_tile_grid_and_name_the_share_of_tiles_skipped() -> None:
    states = np.zeros((8, 8), dtype=np.int8)
    states[band(8, 1)] = 1  # 22 of 64 tiles computed: 42 skipped, 66 %
    states[np.eye(8, dtype=bool)] = 2
    fig = tokens_figure(band(512, 100), 128)
    (tokens,) = fig.data
    assert np.asarray(tokens.z).shape == (512, 512) and int(np.asarray(tokens.z).sum()) == int(band(512, 100).sum())
    assert fig.layout.title.text == "First 512 tokens"
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 2 * 3  # tile edges at 128, 256, 384, across and down
    fig = tiles_figure(states, 1024, 128)
    (tiles,) = fig.data
    assert np.array_equal(np.asarray(tiles.z), states)
    assert fig.layout.title.text == "n = 1024: 66% of the tiles skipped"
    assert list(tiles.colorbar.ticktext) == ["skipped", "computed,<br>masked", "computed,<br>full"]
    assert set(np.asarray(tiles.customdata).ravel()) == {"skipped", "computed, masked", "computed, full"}


def test_the_pattern_panels_refuse_a_mask_that_is_not_a_matrix() -> None:
    with pytest.raises(ValueError, match="2-D"):
        tokens_figure(np.ones(5), 128)
    with pytest.raises(ValueError, match="2-D"):
        tiles_figure(np.zeros(5), 5, 128)


def test_error_figure_draws_each_route_in_its_colour_the_trend_and_a_flat_route() -> None:
    curves = {"Performer": ("performer", (16, 64, 256), (0.4, 0.2, 0.1), (0.01, 0.01, 0.01)),
              "Linformer, random": ("linformer", (8, 32), (5.0, 2.0), (0.1, 0.1)),
              "Linformer, pooled": ("linformer", (8, 32), (0.2, 0.1), (0.0, 0.0))}  # fmt: skip
    fig = error_figure(curves, ((16, 256), (0.4, 0.1)), {"Linear": ("linear", 0.12)}, talk=True)
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["Performer"].y) == [0.4, 0.2, 0.1]
    assert by_name["Performer"].line.color == IMPL_COLORS["performer"]
    assert by_name["Linformer, random"].line.dash == "solid" and by_name["Linformer, pooled"].line.dash == "dash"
    assert by_name["c/√m"].line.color == THEORY
    assert list(by_name["Linear"].x) == [8, 256] and list(by_name["Linear"].y) == [0.12, 0.12]  # across every size
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_spectrum_figure_draws_the_median_map_and_marks_the_chosen_k() -> None:
    energy = np.array([[0.5, 0.9, 1.0], [0.7, 0.95, 1.0], [0.9, 1.0, 1.0]])
    fig = spectrum_figure(energy, 2)
    median = next(t for t in fig.data if t.name == "median map")
    assert np.allclose(median.y, [0.7, 0.95, 1.0])
    mark = fig.data[-1]
    assert list(mark.x) == [2, 2] and mark.text[-1] == "k = 2: 95%"
    assert spectrum_figure(energy, 99).data[-1].text[-1] == "k = 3: 100%"  # past r: the last value
    with pytest.raises(ValueError, match="maps, r"):
        spectrum_figure(np.ones(3), 1)


def test_weights_panels_share_one_scale_and_say_why_a_route_has_none() -> None:
    exact = np.full((3, 3), 1 / 3)
    route = np.eye(3)
    left = weights_figure(exact, ["a", "b", "a"], "Exact softmax", scale=False)
    right = weights_figure(route, ["a", "b", "a"], "Window")
    assert (left.layout.title.text, right.layout.title.text) == ("Exact softmax", "Window")
    assert np.array_equal(np.asarray(right.data[0].z), route)
    assert (left.data[0].zmin, left.data[0].zmax) == (right.data[0].zmin, right.data[0].zmax) == (0, 1)
    assert not left.data[0].showscale and right.data[0].showscale  # one colour bar, on the last panel
    assert list(right.layout.xaxis.ticktext) == ["a", "b", "a"]  # a repeated word keeps its place
    empty = weights_figure(None, ["a", "b", "c"], "Linformer", "signed coefficients")
    assert not empty.data and "signed coefficients" in empty.layout.annotations[-1].text
    with pytest.raises(ValueError, match="labels"):
        weights_figure(route, ["a"], "Window")


def test_a_route_with_its_knob_keeps_its_routes_colour_on_the_cost_figures() -> None:
    from figures.benchmark import memory_figure, time_figure

    rows = [{"impl": impl, "n": n, "status": "ok", "median_ms": 1.0 * n, "iqr_ms": 0.1, "samples": 3,
             "predicted_bytes": 1000 * n, "peak_bytes": 900 * n}
            for impl in ("sdpa", "performer(64)", "sdpa-masked(32)") for n in (256, 512)]  # fmt: skip
    for fig in (time_figure(rows), memory_figure(rows)):
        colours = {t.name.split(" ")[0]: t.line.color or t.marker.color for t in fig.data}
        assert colours["performer(64)"] == IMPL_COLORS["performer"] != THEORY
        assert colours["sdpa-masked(32)"] == IMPL_COLORS["sdpa-masked"]
        assert colours["sdpa"] == IMPL_COLORS["sdpa"]
