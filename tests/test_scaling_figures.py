"""figures.scaling: each builder on real tables — the right series, the shared colours, talk mode."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from attention_core import scaling
from attention_core.scaling import RowSample
from figures import scaling as F
from figures.style import BASE_FONT, SCALED, TALK_FONT, UNSCALED

DIMS = [1, 4, 16, 64]
PANELS = (0, 1)  # unscaled, scaled (or the ratio): the two panels a page sets side by side
STRATEGY_PANELS = ("entropy_pct", "max_weight")
# Where each builder's figures sit in builders(): the panels of one pair are consecutive.
HIST, SATURATION, ROW, GRADIENT, JACOBIAN, STRATEGIES, INIT, TRAINING = 1, 3, 5, 8, 10, 12, 14, 17


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


def jacobian(row: RowSample, panel: int, talk: bool = False) -> go.Figure:
    return F.jacobian_figure(row.jacobian_unscaled.numpy(), row.jacobian_scaled.numpy(), panel, 64, talk=talk)


def builders(t: dict, talk: bool) -> list[go.Figure]:  # type: ignore[type-arg]
    row = t["row"]
    return [
        F.variance_figure(t["variance"], 16, talk=talk),
        *(F.histogram_figure(t["hist"][p], p, 64, talk=talk) for p in PANELS),
        *(F.saturation_figure(t["saturation"], c, 16, talk=talk) for c in F.SATURATION_PANELS),
        F.row_bars_figure(row.weights_unscaled.numpy(), row.weights_scaled.numpy(), 64, talk=talk),
        F.temperature_figure(t["sweep"], 8.0, 64, talk=talk),
        F.temperature_bars_figure(row.weights_at(8.0).numpy(), 8.0, talk=talk),
        *(F.gradient_figure(t["gradient"], p, 16, talk=talk) for p in PANELS),
        *(jacobian(row, p, talk) for p in PANELS),
        *(F.strategies_figure(t["strategies"], c, talk=talk) for c in STRATEGY_PANELS),
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
    pairs = [figs[i] for i in (0, ROW, INIT, TRAINING)] + [figs[SATURATION], figs[SATURATION + 1], figs[GRADIENT]]
    for i, fig in enumerate(pairs):
        assert {UNSCALED, SCALED} <= colours(fig), i
    # the histogram's panels: q·k in the unscaled colour, q·k/√d_k in the scaled one
    assert UNSCALED in colours(figs[HIST]) and SCALED not in colours(figs[HIST])
    assert SCALED in colours(figs[HIST + 1]) and UNSCALED not in colours(figs[HIST + 1])
    for column in STRATEGY_PANELS:
        strategies = F.strategies_figure(tables["strategies"], column)
        bar_colours = list(strategies.data[0].marker.color)
        names = list(tables["strategies"]["strategy"])
        assert bar_colours[names.index("none")] == UNSCALED and bar_colours[names.index("√d_k")] == SCALED
        assert list(strategies.data[0].x) == list(tables["strategies"][column])
    assert F.NAIVE not in (UNSCALED, SCALED) and F.STABLE not in (UNSCALED, SCALED)


def test_paired_panels_show_one_legend_and_one_colour_bar(tables: dict) -> None:  # type: ignore[type-arg]
    """Panels drawn as separate figures, side by side on a laptop and stacked on a phone: the runs' legend on the
    first saturation panel only; the Jacobians on one colour scale (test below), its bar on each."""
    entropy, largest = (F.saturation_figure(tables["saturation"], c, 16) for c in F.SATURATION_PANELS)
    assert [t.name for t in entropy.data if t.showlegend is not False] == ["q·k", "q·k/√d_k"]
    assert all(t.showlegend is False for t in largest.data)
    assert list(largest.data[1].y) == list(tables["saturation"]["max_weight_scaled"])
    assert all(jacobian(tables["row"], p).data[0].showscale is not False for p in PANELS)


def test_variance_figure_plots_the_measured_numbers(tables: dict) -> None:  # type: ignore[type-arg]
    fig = F.variance_figure(tables["variance"], 16)
    measured = {t.name: t for t in fig.data}
    assert list(measured["measured, q·k"].y) == list(tables["variance"]["empirical_var"])
    assert list(measured["theory: d_k"].y) == [float(d) for d in DIMS]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_jacobian_heatmaps_share_one_symmetric_scale(tables: dict) -> None:  # type: ignore[type-arg]
    row = tables["row"]
    a, b = (jacobian(row, p).data[0] for p in PANELS)
    assert a.zmin == b.zmin == -a.zmax and a.zmax == b.zmax > 0
    largest = max(np.abs(row.jacobian_unscaled.numpy()).max(), np.abs(row.jacobian_scaled.numpy()).max())
    assert a.zmax == pytest.approx(largest)
    assert np.allclose(np.asarray(a.z), row.jacobian_unscaled.numpy())
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


def test_panel_titles_have_room_and_crowded_log_labels_are_thinned(tables: dict) -> None:  # type: ignore[type-arg]
    """A panel's title sits above its plot: the top margin must hold it, or the browser cuts it (talk mode's font)."""
    figs = builders(tables, True)
    for fig in figs[HIST:ROW] + figs[GRADIENT:INIT]:
        size = fig.layout.title.font.size
        assert fig.layout.margin.t >= 1.3 * size, fig.layout.title.text
    # A dozen decades of gradient on a half-width (or phone-width) panel: every third is labelled, not every one.
    for p in PANELS:
        for talk in (False, True):
            assert F.gradient_figure(tables["gradient"], p, talk=talk).layout.yaxis.dtick == 3
