"""One query's weight bars: every bar labelled while the labels fit, the largest few when crowded."""

from __future__ import annotations

import numpy as np
import pytest

from figures import walkthrough as WF


def _weights(n: int, masked: int = 0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=n)
    blocked = np.arange(n) >= n - masked
    e = np.where(blocked, 0.0, np.exp(logits - logits[~blocked].max()))
    return e / e.sum(), blocked


@pytest.mark.parametrize("n", [2, 6, WF.LABEL_EVERY_BAR_UP_TO])
def test_few_keys_label_every_bar(n: int) -> None:
    w, blocked = _weights(n, masked=1)
    bar = WF.query_weights(w, [f"k{j}" for j in range(n)], blocked=blocked).data[0]
    assert list(bar.text) == [f"{x:.0%}" for x in w[:-1]] + ["masked"]


@pytest.mark.parametrize("talk", [False, True])
@pytest.mark.parametrize("n", [WF.LABEL_EVERY_BAR_UP_TO + 1, 16, 128])
def test_many_keys_label_only_the_largest_weights(n: int, talk: bool) -> None:
    w, blocked = _weights(n, masked=3, seed=n)
    fig = WF.query_weights(w, [f"k{j}" for j in range(n)], blocked=blocked, talk=talk)
    text = list(fig.data[0].text)
    labelled = [j for j, t in enumerate(text) if t.endswith("%")]
    assert len(labelled) == WF.CROWDED_LABELS
    top = np.argsort(-np.where(blocked, -1, w))[: WF.CROWDED_LABELS]
    assert sorted(labelled) == sorted(top.tolist())
    assert [text[j] for j in np.flatnonzero(blocked)] == ["✕"] * 3
    assert all(t == "" for j, t in enumerate(text) if j not in labelled and not blocked[j])
    (note,) = fig.layout.annotations
    assert note.text == "✕ masked key" and note.yref == "paper" and note.y == 1 and note.yanchor == "bottom"
    assert fig.layout.margin.t >= WF.font_size(talk) + 16  # the note has a margin of its own above the bars
    # Hover still gives every key its value, and says which ones are masked.
    hover = list(fig.data[0].customdata)
    assert hover[-1] == "masked" and hover[0] == f"{w[0]:.3f}"


def test_a_weight_that_rounds_to_zero_gets_no_label() -> None:
    w = np.zeros(20)
    w[0] = 0.996
    w[1] = 0.004  # "0%" would say nothing the bar does not
    text = list(WF.query_weights(w, [f"k{j}" for j in range(20)]).data[0].text)
    assert text[0] == "100%" and text[1:] == [""] * 19


def test_crowded_without_a_mask_has_no_note() -> None:
    w, _ = _weights(16)
    assert len(WF.query_weights(w, [f"k{j}" for j in range(16)]).layout.annotations) == 0


def test_blocked_of_another_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="blocked must have the weights' shape"):
        WF.query_weights(np.full(4, 0.25), list("abcd"), blocked=np.zeros(3, bool))
