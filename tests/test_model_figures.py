"""Figure builders of the Real attention page: the tiled grid, one token across heads, layer × head maps."""

from __future__ import annotations

import numpy as np
import pytest

from figures.model import head_label, layer_head_grid, layer_head_map, token_across_heads


def fake_weights(n_layers: int = 6, n_heads: int = 12, n: int = 5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.random((n_layers, n_heads, n, n))
    return w / w.sum(-1, keepdims=True)  # rows sum to 1, like softmax weights


def test_each_tile_holds_its_heads_weights_and_each_marker_names_it() -> None:
    w = fake_weights()
    tokens = [f"t{i}" for i in range(5)]
    fig = layer_head_grid(w, tokens, selected=(3, 1))
    z = np.asarray(fig.data[0].z, dtype=float)
    step = 5 + max(1, 5 // 6)
    for layer, head in [(0, 0), (3, 1), (5, 11)]:
        tile = z[layer * step : layer * step + 5, head * step : head * step + 5]
        assert np.allclose(tile, w[layer, head])
    markers = fig.data[1]
    assert len(markers.x) == 72
    for i in (0, 13, 71):  # point i is head divmod(i, 12): what the page decodes after a click
        layer, head = divmod(i, 12)
        assert markers.customdata[i] == head_label(layer, head)
        assert markers.x[i] == pytest.approx(head * step + 2) and markers.y[i] == pytest.approx(layer * step + 2)
    frame = fig.layout.shapes[0]
    assert frame.x0 < 1 * step < frame.x1 and frame.y0 < 3 * step < frame.y1
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == 1


def test_grid_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="n_layers, H, L, L"):
        layer_head_grid(np.zeros((6, 12, 4, 5)), ["a"] * 4)
    with pytest.raises(ValueError, match="token labels"):
        layer_head_grid(fake_weights(), ["a"] * 4)
    with pytest.raises(ValueError, match="outside"):
        layer_head_grid(fake_weights(), ["a"] * 5, selected=(6, 0))


def test_one_tokens_row_in_every_head() -> None:
    w = fake_weights()
    tokens = ["[CLS]", "the", "it", "the", "[SEP]"]
    fig = token_across_heads(w[:, :, 2, :], tokens, 2)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (5, 6 * 13 - 1)  # a blank column between layers
    assert np.allclose(z[:, 13 * 4 + 7], w[4, 7, 2, :])
    assert np.isnan(z[:, 12]).all()
    assert list(fig.data[0].y) == ["[CLS]", "the ·1", "it", "the ·3", "[SEP]"]  # repeated words told apart
    assert list(fig.layout.xaxis.ticktext) == [f"L{layer}" for layer in range(6)]  # short: level on a phone
    assert fig.layout.xaxis.tickangle == 0
    with pytest.raises(ValueError, match="query"):
        token_across_heads(w[:, :, 2, :], tokens, 5)


def test_layer_head_map_writes_every_share() -> None:
    v = np.linspace(0, 1, 72).reshape(6, 12)
    fig = layer_head_map(v, title="shares")
    assert fig.data[0].text[0][0] == "0" and fig.data[0].text[5][11] == "1"
    assert fig.data[0].text[2][3] == f"{v[2, 3]:.2f}".replace("0.", ".", 1)
    with pytest.raises(ValueError, match="shares"):
        layer_head_map(v * 2, title="x")


def test_long_sentences_are_shown_as_block_means() -> None:
    w = fake_weights(n=70)
    fig = layer_head_grid(w, [f"t{i}" for i in range(70)])
    z = np.asarray(fig.data[0].z, dtype=float)
    k, m = 3, 24  # ceil(70 / 32) = 3 tokens a block, ceil(70 / 3) = 24 blocks a side
    step = m + max(1, m // 6)
    assert z.shape == (6 * step - (step - m), 12 * step - (step - m))
    assert np.isclose(z[2 * step, 5 * step], w[2, 5, :k, :k].mean(), atol=1e-6)  # first block of L2·H5
    assert np.isclose(z[2 * step + m - 1, 5 * step + m - 1], w[2, 5, 69, 69], atol=1e-6)  # the ragged last block
    assert "3×3 blocks" in fig.data[1].hovertemplate
