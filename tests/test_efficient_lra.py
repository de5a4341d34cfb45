"""The published Long Range Arena figures: each average is the mean of its five tasks and each speed-up
is its steps per second over the Transformer's, so a mistyped number shows."""

from __future__ import annotations

import pytest

from attention_core.efficient import LRA_RESULTS, ROUTE_OF_MODEL, lra_result

PUBLISHED_MISMATCH = {"Sinkhorn Trans.": 51.476}  # the paper prints 51.39 beside these five scores


@pytest.mark.parametrize("row", LRA_RESULTS, ids=lambda r: r.model)
def test_average_is_the_mean_of_the_five_tasks(row):
    mean = sum((row.listops, row.text, row.retrieval, row.image, row.pathfinder)) / 5
    if row.model in PUBLISHED_MISMATCH:
        assert mean == pytest.approx(PUBLISHED_MISMATCH[row.model], abs=1e-9) and row.average == 51.39
    else:
        assert row.average == pytest.approx(mean, abs=0.006)


@pytest.mark.parametrize("row", [r for r in LRA_RESULTS if r.speedup_4k is not None], ids=lambda r: r.model)
def test_speedup_is_steps_per_second_over_the_transformers(row):
    base = lra_result("Transformer").steps_per_s_4k
    assert row.speedup_4k == pytest.approx(row.steps_per_s_4k / base, abs=0.051)


def test_the_rows_the_page_shows():
    assert all(lra_result(model) for model in ROUTE_OF_MODEL)
    assert lra_result("Longformer").memory_gb_4k is None  # not in the paper's efficiency benchmark
    with pytest.raises(ValueError, match="no LRA row"):
        lra_result("Reformer 2")
