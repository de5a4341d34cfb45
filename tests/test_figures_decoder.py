"""Figure builders of the decoder page, on small hand-made data: what each trace holds, where each head's tile
sits, and bad input refused."""

from __future__ import annotations

import numpy as np
import pytest

from figures.arrays import shrink
from figures.decoder import (
    GLOBAL,
    LOCAL,
    blank_blocked,
    decoder_grid,
    generation_figure,
    next_token_figure,
    shared_kv_figure,
    shift_figure,
    sink_figure,
    step_times_figure,
    token_label,
    unique_labels,
    window_figure,
)
from figures.model import head_label
from figures.style import HIGHLIGHT


def causal_weights(n_layers: int = 3, n_heads: int = 2, n: int = 5, seed: int = 0) -> np.ndarray:
    """Random rows that sum to 1 over the keys a causal mask allows, 0 above the diagonal."""
    rng = np.random.default_rng(seed)
    w = rng.random((n_layers, n_heads, n, n)) * np.tril(np.ones((n, n)))
    return w / w.sum(-1, keepdims=True)


def test_token_labels_show_spaces_and_newlines_and_stay_distinct() -> None:
    assert token_label(" Paris") == "␣Paris" == token_label("▁Paris")
    assert token_label("\n") == "↵" and token_label(" ") == "␣" and token_label("") == "∅"
    assert token_label("x" * 40).endswith("…") and len(token_label("x" * 40)) == 16
    assert unique_labels(["<bos>", " the", " cat", " the"]) == ["<bos>", "␣the ·1", "␣cat", "␣the ·3"]


def test_next_token_bars_hold_the_probabilities_in_order() -> None:
    fig = next_token_figure([" Paris", " the", " a"], [0.5, 0.2, 0.1])
    bar = fig.data[0]
    assert list(bar.x) == [0.5, 0.2, 0.1] and list(bar.y) == ["␣Paris", "␣the", "␣a"]
    assert list(bar.text) == ["50.0%", "20.0%", "10.0%"]
    assert fig.layout.yaxis.autorange == "reversed"  # the most likely on top


@pytest.mark.parametrize("probs", [[0.5, 0.2], [0.5, 0.2, 1.5], [0.5, float("nan"), 0.1]])
def test_next_token_bars_refuse_what_is_not_one_probability_per_token(probs: list[float]) -> None:
    with pytest.raises(ValueError, match="probabilit"):
        next_token_figure(["a", "b", "c"], probs)


def test_the_shift_figure_draws_both_models_per_token() -> None:
    fig = shift_figure(["a", "b"], [0.6, 0.3], [0.4, 0.5], window=512)
    assert [list(t.x) for t in fig.data] == [[0.6, 0.3], [0.4, 0.5]]
    assert "512" in fig.data[0].name and "off" in fig.data[1].name
    assert fig.layout.barmode == "group"


def test_each_grid_tile_holds_its_heads_weights_layers_across() -> None:
    w = blank_blocked(causal_weights(n_layers=3, n_heads=2, n=5))
    fig = decoder_grid(w, global_layers=(2,), selected=(1, 1))
    z = np.asarray(fig.data[0].z, dtype=float)
    step = 5 + 1
    for layer, head in [(0, 0), (1, 1), (2, 0)]:
        tile = z[head * step : head * step + 5, layer * step : layer * step + 5]
        assert np.allclose(tile, w[layer, head], equal_nan=True)
        assert np.isnan(tile[0, 1]) and not np.isnan(tile[1, 0])  # above the diagonal: blank
    markers = fig.data[1]
    assert len(markers.x) == 6
    for i in range(6):  # point i is head divmod(i, H): what the page decodes after a click
        layer, head = divmod(i, 2)
        assert markers.customdata[i].startswith(head_label(layer, head))
        assert markers.x[i] == pytest.approx(layer * step + 2) and markers.y[i] == pytest.approx(head * step + 2)
    assert "(global)" in markers.customdata[4] and "(local)" in markers.customdata[0]
    frames = fig.layout.shapes
    assert frames[0].line.color == GLOBAL and frames[0].x0 < 2 * step < frames[0].x1
    chosen = frames[-1]
    assert chosen.line.color == HIGHLIGHT and chosen.x0 < 1 * step < chosen.x1 and chosen.y0 < 1 * step < chosen.y1
    ticks = fig.layout.xaxis.ticktext
    assert GLOBAL in ticks[2] and ">2<" in ticks[2] and ticks[1] == "1" and "global" in fig.layout.xaxis.title.text


def test_the_grid_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="n_layers, H, L, L"):
        decoder_grid(np.zeros((3, 2, 4, 5)))
    with pytest.raises(ValueError, match="global layers"):
        decoder_grid(np.zeros((3, 2, 4, 4)), global_layers=(3,))
    with pytest.raises(ValueError, match="outside"):
        decoder_grid(np.zeros((3, 2, 4, 4)), selected=(0, 2))


def test_blank_blocked_leaves_the_causal_triangle_and_the_window_band() -> None:
    w = blank_blocked(np.ones((5, 5)), window=2)
    allowed = ~np.isnan(w)
    # query i sees keys i − 1 and i: the band of a window of 2
    assert allowed.tolist() == [[j in (i - 1, i) for j in range(5)] for i in range(5)]
    assert (~np.isnan(blank_blocked(np.ones((4, 4))))).sum() == 10  # causal: 1 + 2 + 3 + 4


def test_shrink_averages_allowed_cells_and_keeps_blocked_blocks_blank() -> None:
    w = blank_blocked(np.arange(16, dtype=float).reshape(4, 4))
    small, k = shrink(w, 2)
    assert k == 2 and small.shape == (2, 2)
    assert small[0, 0] == pytest.approx(np.mean([0, 4, 5]))  # the block cut by the diagonal: its allowed cells
    assert small[1, 0] == pytest.approx(np.mean([8, 9, 12, 13]))
    assert np.isnan(small[0, 1])  # wholly above the diagonal
    same, one = shrink(w, 8)
    assert one == 1 and np.array_equal(same, w, equal_nan=True)
    with pytest.raises(ValueError, match="square"):
        shrink(np.zeros((2, 3)), 2)


def test_generation_rows_are_steps_by_context_with_the_prompt_marked() -> None:
    rows = np.array([[0.7, 0.2, 0.1, np.nan], [0.5, 0.1, 0.1, 0.3]])
    fig = generation_figure(rows, ["<bos>", " Hi", " there", "!"], [" there", "!"], n_prompt=2)
    assert np.allclose(np.asarray(fig.data[0].z, dtype=float), rows, equal_nan=True)
    assert list(fig.data[0].y) == ["1: ␣there", "2: !"]
    assert fig.layout.shapes[0].x0 == pytest.approx(1.5)  # between the prompt and what was written
    with pytest.raises(ValueError, match="steps=2, context=3"):
        generation_figure(rows, ["a", "b", "c"], ["x", "y"], n_prompt=1)


def test_step_times_show_each_token_and_the_median_of_the_steps_after_the_first() -> None:
    fig = step_times_figure(["a", "b", "c", "d"], [400.0, 50.0, 40.0, 45.0])
    assert list(fig.data[0].y) == [400.0, 50.0, 40.0, 45.0]
    assert fig.data[0].marker.color[0] != fig.data[0].marker.color[1]  # the first one read the prompt too
    assert fig.layout.shapes[0].y0 == pytest.approx(45.0)  # the median of 50, 40, 45
    with pytest.raises(ValueError, match="one finite"):
        step_times_figure(["a"], [float("nan")])


def test_shared_kv_draws_one_query_head_a_panel_on_one_scale() -> None:
    w = blank_blocked(causal_weights(n_layers=1, n_heads=4, n=3)[0])
    figs = [shared_kv_figure(w[h], ["<bos>", "a", "b"], layer=5, head=h, scale=h == 3) for h in range(4)]
    for h, fig in enumerate(figs):
        (heat,) = fig.data
        assert np.allclose(np.asarray(heat.z, dtype=float), w[h], equal_nan=True)
        assert f"L5·H{h}" in heat.hovertemplate and fig.layout.title.text == f"query head {h}"
        assert (heat.zmin, heat.zmax) == (0.0, 1.0) and bool(heat.showscale) == (h == 3)  # one colour bar
    with pytest.raises(ValueError, match="token labels"):
        shared_kv_figure(w[0], ["a"], layer=0, head=0)
    with pytest.raises(ValueError, match=r"\(L, L\)"):
        shared_kv_figure(w, ["<bos>", "a", "b"], layer=0, head=0)


def test_window_figure_puts_local_and_global_side_by_side_with_the_edge() -> None:
    a, b = np.full((4, 4), 0.25), np.full((4, 4), 0.16)
    fig = window_figure(a, b, local_layer=4, global_layer=5, window=256, block=128)
    a[0, 1:] = np.nan  # blocked
    fig = window_figure(a, b, local_layer=4, global_layer=5, window=256, block=128)
    grey, weights = fig.data[0], fig.data[1]
    assert np.allclose(np.asarray(weights.customdata, dtype=float), a, equal_nan=True)
    assert np.allclose(np.asarray(weights.z, dtype=float), np.sqrt(a), equal_nan=True)  # on a square-root scale
    assert np.array_equal(~np.isnan(np.asarray(grey.z, dtype=float)), np.isnan(a))  # grey exactly where blocked
    assert list(weights.x) == [0, 128, 256, 384]
    edge = fig.data[4]
    assert list(edge.y) == [256, 384] and list(edge.x) == [1, 129]  # query i's oldest key: i − w + 1
    assert "local" in fig.layout.annotations[0].text and "global" in fig.layout.annotations[1].text
    with pytest.raises(ValueError, match="same"):
        window_figure(a, np.zeros((3, 3)), local_layer=0, global_layer=5, window=4, block=1)


def test_sinks_are_bars_per_layer_told_apart_with_a_dot_per_head() -> None:
    s = np.array([[0.2, 0.4], [0.9, 0.7], [0.1, 0.3]])
    fig = sink_figure(s, global_layers=(1,))
    local, glob, heads = fig.data
    assert list(local.x) == ["L0", "L2"] and np.allclose(local.y, [0.3, 0.2]) and local.marker.color == LOCAL
    assert list(glob.x) == ["L1"] and np.allclose(glob.y, [0.8]) and glob.marker.color == GLOBAL
    assert np.allclose(heads.y, s.reshape(-1)) and heads.customdata[3] == head_label(1, 1)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        sink_figure(np.array([[1.5]]))
