"""figures.scaling: each builder on real tables — the right series, the shared colours, talk mode."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from attention_core import scaling
from figures import scaling as F
from figures.style import BASE_FONT, SCALED, TALK_FONT, UNSCALED

DIMS = [1, 4, 16, 64]


def colours(fig: go.Figure) -> set[str]:
    found = set()
    for t in fig.data:
        for part in (getattr(t, "marker", None), getattr(t, "line", None)):
            c = getattr(part, "color", None) if part is not None else None
            if isinstance(c, str):
                found.add(c)
            elif c is not None:
                found.update(x for x in c if isinstance(x, str))
    return found


@pytest.fixture(scope="module")
def tables() -> dict[str, object]:
    row = scaling.sample_row(64, 8, seed=0)
    runs = {"scaled": scaling.train_toy(True, 64, steps=12), "unscaled": scaling.train_toy(False, 64, steps=12)}
    return {
        "variance": scaling.variance_table(DIMS, n_samples=2_000),
        "hist": scaling.dot_product_histograms(64, 2_000),
        "saturation": scaling.saturation_table(DIMS, 8, n_rows=32),
        "sweep": scaling.temperature_sweep(64, 8, [0.5, 1, 8, 64], n_rows=32),
        "row": row,
        "gradient": scaling.gradient_table(DIMS, 8, 32),
        "strategies": scaling.scaling_strategies(64, 8, n_rows=32, fit_steps=20),
        "init": scaling.init_effects(64, 16, scaling.named_init_stds(64, 16)),
        "overflow": scaling.softmax_overflow(scaling.overflow_logits(100, 8), "float16"),
        "sweep16": scaling.overflow_sweep([1, 10, 12, 100], "float16"),
        "runs": runs,
    }


def builders(t: dict, talk: bool) -> list[go.Figure]:  # type: ignore[type-arg]
    row = t["row"]
    return [
        F.variance_figure(t["variance"], 16, talk=talk),
        F.histogram_figure(*t["hist"], 64, talk=talk),
        F.saturation_figure(t["saturation"], 16, talk=talk),
        F.row_bars_figure(row.weights_unscaled.numpy(), row.weights_scaled.numpy(), 64, talk=talk),
        F.temperature_figure(t["sweep"], 8.0, 64, talk=talk),
        F.temperature_bars_figure(row.weights_at(8.0).numpy(), 8.0, talk=talk),
        F.gradient_figure(t["gradient"], 16, talk=talk),
        F.jacobian_figure(row.jacobian_unscaled.numpy(), row.jacobian_scaled.numpy(), 64, talk=talk),
        F.strategies_figure(t["strategies"], talk=talk),
        F.init_figure(t["init"], talk=talk),
        F.overflow_figure(t["sweep16"], "float16", scaling.overflow_limit("float16"), 100, talk=talk),
        F.overflow_bars_figure(t["overflow"], talk=talk),
        F.training_figure(t["runs"], "loss", title="loss", y_title="loss", talk=talk),
    ]


def test_every_builder_returns_a_figure_and_talk_enlarges_it(tables: dict) -> None:  # type: ignore[type-arg]
    for normal, big in zip(builders(tables, False), builders(tables, True), strict=True):
        assert isinstance(normal, go.Figure) and len(normal.data) > 0
        assert normal.layout.font.size == BASE_FONT
        assert big.layout.font.size == TALK_FONT


def test_unscaled_and_scaled_keep_their_colours(tables: dict) -> None:  # type: ignore[type-arg]
    figs = builders(tables, False)
    for i in (0, 1, 2, 3, 6, 9, 12):
        assert {UNSCALED, SCALED} <= colours(figs[i]), i
    strategies = F.strategies_figure(tables["strategies"])
    bar_colours = list(strategies.data[0].marker.color)
    names = list(tables["strategies"]["strategy"])
    assert bar_colours[names.index("none")] == UNSCALED and bar_colours[names.index("√d_k")] == SCALED
    assert F.NAIVE not in (UNSCALED, SCALED) and F.STABLE not in (UNSCALED, SCALED)


def test_variance_figure_plots_the_measured_numbers(tables: dict) -> None:  # type: ignore[type-arg]
    fig = F.variance_figure(tables["variance"], 16)
    measured = {t.name: t for t in fig.data}
    assert list(measured["measured, q·k"].y) == list(tables["variance"]["empirical_var"])
    assert list(measured["theory: d_k"].y) == [float(d) for d in DIMS]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_jacobian_heatmaps_share_one_symmetric_scale(tables: dict) -> None:  # type: ignore[type-arg]
    row = tables["row"]
    fig = F.jacobian_figure(row.jacobian_unscaled.numpy(), row.jacobian_scaled.numpy(), 64)
    a, b = fig.data
    assert a.zmin == b.zmin == -a.zmax and a.zmax == b.zmax > 0
    assert np.allclose(np.asarray(b.z), row.jacobian_scaled.numpy())


def test_overflow_bars_mark_every_nan_weight(tables: dict) -> None:  # type: ignore[type-arg]
    table = tables["overflow"]
    fig = F.overflow_bars_figure(table)
    marks = [a for a in fig.layout.annotations if a.text == "NaN"]
    assert len(marks) == int(table["naive"].isna().sum()) > 0
    assert not any(math.isnan(y) for y in fig.data[0].y)  # NaN drawn as an empty bar plus the mark


def test_overflow_figure_shades_past_the_limit_and_floors_zero_errors(tables: dict) -> None:  # type: ignore[type-arg]
    limit = scaling.overflow_limit("float16")
    fig = F.overflow_figure(tables["sweep16"], "float16", limit, 100)
    zone = fig.data[0]
    assert zone.fill == "toself" and min(zone.x) == pytest.approx(limit)
    stable = next(t for t in fig.data if t.name == "max-subtracted")
    assert min(stable.y) >= F.LOG_FLOOR


def test_training_figure_draws_raw_faint_and_smoothed_bold(tables: dict) -> None:  # type: ignore[type-arg]
    fig = F.training_figure(tables["runs"], "loss", title="t", y_title="loss", uniform=0.875)
    bold = [t for t in fig.data if t.showlegend is not False]
    assert [t.name for t in bold] == ["scaled", "unscaled"]
    assert [t.line.color for t in bold] == [SCALED, UNSCALED]
    assert list(bold[0].y) == list(tables["runs"]["scaled"]["loss_smooth"])
    assert fig.layout.shapes[0].y0 == 0.875 and fig.layout.annotations[0].text == "uniform weights"


def test_panel_titles_have_room_and_talk_mode_thins_crowded_log_labels(tables: dict) -> None:  # type: ignore[type-arg]
    """A panel's title sits above its plot: the top margin must hold it, or the browser cuts it (talk mode's font)."""
    for fig in builders(tables, True)[1:3] + builders(tables, True)[6:9]:
        size = fig.layout.annotations[0].font.size
        assert fig.layout.margin.t >= 1.3 * size, fig.layout.annotations[0].text
    # A dozen decades of gradient on a projector-sized plot: every third is labelled, not every one.
    assert F.gradient_figure(tables["gradient"], talk=True).layout.yaxis.dtick == 3
    assert F.gradient_figure(tables["gradient"]).layout.yaxis.dtick == 1
