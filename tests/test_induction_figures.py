"""The induction page's figures, drawn without Streamlit."""

from __future__ import annotations

import numpy as np
import pytest

from figures.induction import sequence_figure


def test_sequence_figure_names_at_most_a_dozen_keys_upright_and_every_row() -> None:
    n = 20
    tokens = [f"w{i % 10}" for i in range(n)]  # ten words, repeated once
    w = np.tril(np.ones((n, n)))
    w /= w.sum(axis=1, keepdims=True)  # causal rows summing to 1
    fig = sequence_figure(w, tokens, ["(new)"] * n, [0.5] * n)
    x, y = fig.layout.xaxis, fig.layout.yaxis
    assert list(x.tickvals) == list(range(0, n, 2)) and list(x.ticktext) == tokens[::2]
    assert x.tickangle == -90
    assert len(y.tickvals) == n and y.ticktext[3] == "w3 → (new)"  # the rows keep every token and its guess
    assert fig.data[0].colorbar.orientation == "h"  # under the heatmap, not beside it
    short = sequence_figure(w[:5, :5], tokens[:5], ["a"] * 5, [0.5] * 5)
    assert list(short.layout.xaxis.ticktext) == tokens[:5]
    with pytest.raises(ValueError):
        sequence_figure(w, tokens[:-1], ["a"] * n, [0.5] * n)
