"""Figures of the √d_k explorer: pure functions from the tables of ``attention_core.scaling`` to figures.

Unscaled is always ``UNSCALED`` (vermillion) and ÷√d_k always ``SCALED`` (blue), as on the
walkthrough; theory is a grey line. The naive and the stable softmax get two colours of their
own, so that red never means "naive" on one tab and "unscaled" on the next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .arrays import as_array
from .style import DIVERGING, HIGHLIGHT, SCALED, THEORY, UNSCALED, base_layout, font_size

NEUTRAL = "#9A9A9A"  # strategies that are neither "none" nor "√d_k"
NAIVE = "#CC79A7"  # exp(x)/Σexp(x) (Okabe-Ito reddish purple)
STABLE = "#009E73"  # max-subtracted softmax (Okabe-Ito bluish green)
POW2_TICKS = [1, 4, 16, 64, 256, 1024, 4096]
LOG_FLOOR = 1e-18  # zero errors are drawn here on log axes (hover gives the true value)
RUNS = (("unscaled", UNSCALED, "q·k"), ("scaled", SCALED, "q·k/√d_k"))  # a table's column suffix, colour, name


def _panel(fig: go.Figure, title: str, talk: bool, height: int, grid: bool = True) -> go.Figure:
    """One of a pair of panels set side by side (stacked on a phone): its title a size above the figure's text."""
    base_layout(fig, talk=talk, height=height, grid=grid)
    return fig.update_layout(title={"text": title, "font": {"size": font_size(talk) + 1}})


def _dk_axes(fig: go.Figure, d_k: int | None) -> None:
    """A log d_k axis on powers of two on every panel, with the chosen d_k marked."""
    fig.update_xaxes(type="log", tickvals=POW2_TICKS, ticktext=[str(t) for t in POW2_TICKS], title_text="d_k")
    if d_k is not None:
        fig.add_vline(x=d_k, line={"color": HIGHLIGHT, "width": 2, "dash": "dot"})


def _legend(fig: go.Figure, y: float = 1.02) -> None:
    """A horizontal legend: above the plot (y ≥ 1), or below it (y < 0) in half-width figures, where one on top
    would run into the title."""
    fig.update_layout(legend={"orientation": "h", "yanchor": "bottom" if y > 0 else "top", "y": y, "x": 0})


def _log_y(fig: go.Figure, **kw: object) -> None:
    """A log y axis labelled at powers of ten only (no 2s and 5s in between)."""
    fig.update_yaxes(type="log", dtick=kw.pop("dtick", 1), exponentformat="power", **kw)


def _weight_bars(
    bars: Sequence[tuple[Sequence[float], str, str | None, str]], *, title: str, talk: bool, height: int
) -> go.Figure:
    """One query's weights over its keys k0, k1, …: a series of bars per ``(weights, colour, name, hover label)``."""
    fig = go.Figure()
    for weights, color, name, label in bars:
        ys = as_array(weights).tolist()
        fig.add_trace(go.Bar(x=[f"k{j}" for j in range(len(ys))], y=ys, name=name, marker={"color": color},
                             hovertemplate="%{x}: %{y:.4f}<extra>" + label + "</extra>"))  # fmt: skip
    fig.update_yaxes(range=[0, 1.02], title_text="weight")
    fig.update_xaxes(title_text="key")
    return base_layout(fig, title=title, talk=talk, height=height)


def variance_figure(table: pd.DataFrame, d_k: int | None = None, *, talk: bool = False) -> go.Figure:
    """Var(q·k) and Var(q·k/√d_k) against d_k on log axes: measured points over the theory lines.

    Untitled: the page writes its title above it, where a phone wraps it (a plotly title does not, and ran over the
    legend)."""
    d, size = table["d_k"], 13 if talk else 10
    fig = go.Figure()
    for theory, column, name, marker in (("d_k", "empirical_var", "q·k", {"color": UNSCALED}),
                                         ("1", "scaled_var", "q·k/√d_k", {"color": SCALED, "symbol": "diamond"})):
        y = table["theoretical_var"] if theory == "d_k" else [1.0] * len(d)
        fig.add_trace(go.Scatter(x=d, y=y, mode="lines", name=f"theory: {theory}",
                                 line={"color": THEORY, "dash": "dash" if theory == "d_k" else "dot"}))
        fig.add_trace(go.Scatter(x=d, y=table[column], mode="markers", name=f"measured, {name}",
                                 marker={**marker, "size": size},
                                 hovertemplate="d_k=%{x}<br>Var(" + name + ")=%{y:.4g}<extra></extra>"))
    _dk_axes(fig, d_k)
    _log_y(fig, title_text="variance of the score")
    base_layout(fig, talk=talk, height=400)
    _legend(fig)
    return fig.update_layout(margin={"t": 50})


def histogram_figure(table: pd.DataFrame, panel: int, d_k: int, *, talk: bool = False) -> go.Figure:
    """A ``histogram_table`` of q·k (``panel`` 0) or of q·k/√d_k (``panel`` 1) with its normal approximation, on
    its own x range; the page sets the two panels side by side under one title."""
    _, color, name = RUNS[panel]
    width = float(table["center"].iloc[1] - table["center"].iloc[0])  # histogram_table has at least 2 bins
    fig = go.Figure()
    fig.add_trace(go.Bar(x=table["center"], y=table["density"], width=width, opacity=0.85, name=f"measured {name}",
                         marker={"color": color, "line": {"width": 0}}, showlegend=False,
                         hovertemplate="%{x:.3g}: density %{y:.3g}<extra></extra>"))  # fmt: skip
    fig.add_trace(go.Scatter(x=table["center"], y=table["normal_pdf"], mode="lines", name="normal approximation",
                             line={"color": THEORY, "width": 2}, showlegend=False, hoverinfo="skip"))  # fmt: skip
    fig.update_xaxes(title_text="score")
    fig.update_yaxes(title_text="density")
    _panel(fig, f"q·k   (d_k = {d_k})" if panel == 0 else "q·k / √d_k", talk, 340)
    return fig.update_layout(bargap=0, margin={"t": 50})


def _run_lines(
    fig: go.Figure, table: pd.DataFrame, column: str, what: str, talk: bool, *, label: str = "",
    dash: str | None = None, **kw: object,
) -> None:  # fmt: skip
    """One line per run (unscaled, scaled) of ``column_<run>`` against d_k; a dashed one is thinner, without
    markers."""
    for run, color, name in RUNS:
        fig.add_trace(go.Scatter(x=table["d_k"], y=table[f"{column}_{run}"], mode="lines" if dash else "lines+markers",
                                 line={"color": color, "width": 2 if dash else 3, "dash": dash},
                                 marker={"size": 11 if talk else 8}, name=name + label,
                                 hovertemplate="d_k=%{x}<br>" + what + "<extra>" + name + "</extra>", **kw))


SATURATION_PANELS = ("entropy_pct", "max_weight")  # the columns of saturation_table drawn, one panel each


def saturation_figure(table: pd.DataFrame, column: str, d_k: int | None = None, *, talk: bool = False) -> go.Figure:
    """The mean entropy (``column`` ``"entropy_pct"``, % of uniform) or largest weight (``"max_weight"``) of a row
    against d_k, unscaled and scaled. The runs' legend is on the entropy panel, the first of the pair."""
    entropy = column == "entropy_pct"
    fig = go.Figure()
    _run_lines(fig, table, column, "entropy %{y:.1f}%" if entropy else "max weight %{y:.3f}", talk,
               showlegend=entropy)  # fmt: skip
    _dk_axes(fig, d_k)
    fig.update_yaxes(range=[0, 102], ticksuffix="%") if entropy else fig.update_yaxes(range=[0, 1.02])
    _panel(fig, "entropy of a row (% of uniform)" if entropy else "largest weight in a row", talk, 400)
    _legend(fig, 1.02)
    return fig.update_layout(margin={"t": 90})  # the same on both panels, so that their plots line up


def row_bars_figure(
    weights_unscaled: Sequence[float], weights_scaled: Sequence[float], d_k: int, *, talk: bool = False
) -> go.Figure:
    """One query's softmax weights over its keys, unscaled next to scaled."""
    runs = zip((weights_unscaled, weights_scaled), RUNS, strict=True)
    fig = _weight_bars([(w, color, f"softmax({name})", run) for w, (run, color, name) in runs],
                       title=f"One query's weights at d_k = {d_k}", talk=talk, height=400)  # fmt: skip
    _legend(fig, -0.3)  # below the plot: above it, on a phone, the title ran over it
    return fig.update_layout(barmode="group", bargap=0.25)


def temperature_figure(sweep: pd.DataFrame, tau: float, d_k: int, *, talk: bool = False) -> go.Figure:
    """Mean entropy and largest weight (both in %) of softmax(q·k/τ) against τ, with the chosen τ marked."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=sweep["tau"], y=sweep["entropy_pct"], mode="lines", name="entropy (% of uniform)",
                             line={"color": THEORY, "width": 3},
                             hovertemplate="τ=%{x:.3g}<br>entropy %{y:.1f}%<extra></extra>"))  # fmt: skip
    fig.add_trace(go.Scatter(x=sweep["tau"], y=100 * sweep["max_weight"], mode="lines", name="largest weight (%)",
                             line={"color": THEORY, "width": 2, "dash": "dash"},
                             hovertemplate="τ=%{x:.3g}<br>largest weight %{y:.1f}%<extra></extra>"))  # fmt: skip
    here = sweep.iloc[int((np.log(sweep["tau"]) - np.log(tau)).abs().argmin())]
    dot = {"color": HIGHLIGHT, "size": 14 if talk else 11, "line": {"color": "white", "width": 1}}
    fig.add_trace(go.Scatter(x=[here["tau"]] * 2, y=[here["entropy_pct"], 100 * here["max_weight"]], mode="markers",
                             marker=dot, name=f"τ = {tau:g}", hoverinfo="skip"))  # fmt: skip
    for x, text, color, y in ((1.0, "τ = 1 (none)", UNSCALED, 0.5), (float(np.sqrt(d_k)), "τ = √d_k", SCALED, 0.62)):
        fig.add_vline(x=x, line={"color": color, "width": 2})
        fig.add_annotation(x=np.log10(x), y=y, yref="paper", text=text, showarrow=False, xanchor="left",
                           font={"color": color, "size": font_size(talk) - 2}, bgcolor="rgba(255,255,255,0.8)")
    fig.update_xaxes(type="log", title_text="temperature τ (the softmax sees q·k / τ)")
    fig.update_yaxes(range=[0, 102], ticksuffix="%")
    base_layout(fig, title="From one-hot to uniform as τ grows", talk=talk, height=420)
    _legend(fig, -0.3)
    return fig


def temperature_bars_figure(weights: Sequence[float], tau: float, *, talk: bool = False) -> go.Figure:
    """One query's weights at the chosen temperature."""
    return _weight_bars([(weights, THEORY, None, "")], title=f"softmax(q·k / {tau:g}) for the same query", talk=talk,
                        height=420)  # fmt: skip


def gradient_figure(table: pd.DataFrame, panel: int, d_k: int | None = None, *, talk: bool = False) -> go.Figure:
    """``panel`` 0: ‖∂L/∂z‖ against d_k (median solid, mean dashed); 1: the scaled/unscaled ratios; log axes."""
    fig = go.Figure()
    if panel == 0:
        _run_lines(fig, table, "grad_median", "median %{y:.3g}", talk, label=": median row")
        _run_lines(fig, table, "grad", "mean %{y:.3g}", talk, label=": mean", dash="dash")
    else:
        ratios = (("grad_median_ratio", "median, at z", "solid", 3), ("grad_ratio", "mean, at z", "dash", 2),
                  ("grad_qk_median_ratio", "median, at q·k", "dot", 3))  # fmt: skip
        for column, label, dash, width in ratios:
            fig.add_trace(go.Scatter(x=table["d_k"], y=table[column], mode="lines+markers", name=f"ratio: {label}",
                                     line={"color": THEORY, "dash": dash, "width": width},
                                     marker={"size": 9 if talk else 6},
                                     hovertemplate="d_k=%{x}<br>ratio %{y:.3g}<extra>" + label + "</extra>"))
        fig.add_hline(y=1.0, line={"color": "#BBBBBB", "width": 1})
    _dk_axes(fig, d_k)
    _log_y(fig, dtick=3)  # a dozen decades on half a page (or a phone): every third labelled, so they do not collide
    _panel(fig, "gradient at the softmax input ‖∂L/∂z‖" if panel == 0 else "ratio scaled / unscaled", talk, 440)
    _legend(fig, -0.22)  # each panel's own series, below its plot
    if talk:  # two entries a row, not one, a size smaller: the plot keeps its height on a projector
        small = {"size": font_size(talk) - 4}
        fig.update_layout(legend={"entrywidth": 0.5, "entrywidthmode": "fraction", "font": small})
    return fig.update_layout(margin={"t": 50, "b": 10})


def jacobian_figure(
    jac_unscaled: np.ndarray, jac_scaled: np.ndarray, panel: int, d_k: int, *, talk: bool = False
) -> go.Figure:
    """The softmax Jacobian diag(s) − ssᵀ of one row, unscaled (``panel`` 0) or scaled (1), on the diverging colour
    scale both panels share (set by the larger of the two). Each panel has the colour bar, so that the two heatmaps
    are the same size side by side and stacked on a phone."""
    a, b = as_array(jac_unscaled, float), as_array(jac_scaled, float)
    labels = [f"k{j}" for j in range(a.shape[0])]
    zmax = max(float(np.abs(a).max()), float(np.abs(b).max()), 1e-12)
    fig = go.Figure(go.Heatmap(z=(a, b)[panel], x=labels, y=labels, colorscale=DIVERGING, zmin=-zmax, zmax=zmax,
                               colorbar={"title": {"text": "∂s_i/∂z_j"}},
                               hovertemplate="∂s_%{y}/∂z_%{x} = %{z:.3g}<extra></extra>"))  # fmt: skip
    _panel(fig, f"q·k   (d_k = {d_k})" if panel == 0 else "q·k / √d_k", talk, 420, grid=False)
    fig.update_yaxes(autorange="reversed", scaleanchor="x")
    return fig.update_layout(margin={"t": 50})


def strategies_figure(table: pd.DataFrame, column: str, *, talk: bool = False) -> go.Figure:
    """The entropy (``column`` ``"entropy_pct"``, % of uniform) or largest weight (``"max_weight"``) of each scaling
    strategy, as horizontal bars; each panel names the strategies, as on a phone the two stack."""
    colors = [UNSCALED if s == "none" else SCALED if s == "√d_k" else NEUTRAL for s in table["strategy"]]
    entropy = column == "entropy_pct"
    text, hover, top = ("{:.0f}%", "%{x:.1f}%", 118) if entropy else ("{:.2f}", "%{x:.3f}", 1.18)
    fig = go.Figure(go.Bar(y=table["strategy"], x=table[column], orientation="h", marker={"color": colors},
                           text=[text.format(v) for v in table[column]], textposition="outside", cliponaxis=False,
                           hovertemplate="%{y}: " + hover + "<extra></extra>", showlegend=False))  # fmt: skip
    fig.update_xaxes(range=[0, top])
    fig.update_yaxes(autorange="reversed")
    _panel(fig, "entropy (% of uniform)" if entropy else "largest weight", talk, 420 if talk else 380)
    return fig.update_layout(margin={"t": 50, "r": 30})  # room for a label past the axis' end on a phone


def init_figure(table: pd.DataFrame, *, talk: bool = False) -> go.Figure:
    """Score variance per initial std, unscaled and ÷√d_k, as horizontal bars on a log axis (the std's names fit
    a phone beside the bars, where under them they slanted), with the target 1 marked."""
    fig = go.Figure()
    labels = [f"{i}<br>σ = {s:.3g}" for i, s in zip(table["init"], table["std"], strict=True)]
    for run, color, name in RUNS:
        fig.add_trace(go.Bar(y=labels, x=table[f"score_var_{run}"], orientation="h", name=f"Var({name})",
                             marker={"color": color},
                             hovertemplate="%{y}<br>Var(" + name + ") = %{x:.3g}<extra></extra>"))  # fmt: skip
    fig.add_vline(x=1.0, line={"color": THEORY, "dash": "dash", "width": 2}, name="variance 1, the goal",
                  showlegend=True)  # fmt: skip
    fig.update_xaxes(type="log", dtick=2, exponentformat="power", title_text="variance of the scores")
    fig.update_yaxes(autorange="reversed", title_text="initial std of W_q, W_k")
    base_layout(fig, talk=talk, height=420)
    _legend(fig)
    return fig.update_layout(barmode="group", margin={"t": 60})


def overflow_figure(
    sweep: pd.DataFrame, dtype: str, limit: float, magnitude: float, *, talk: bool = False
) -> go.Figure:
    """Largest error against float64 as the logits grow: the naive softmax ends in NaN past ``limit``.

    Zero errors are drawn at ``LOG_FLOOR``; NaN errors are not drawn (the shaded zone says why).
    """
    m = sweep["magnitude"]
    x_max = float(m.max()) * 1.3
    fig = go.Figure()
    if limit < x_max:
        fig.add_trace(go.Scatter(x=[limit, limit, x_max, x_max, limit], y=[LOG_FLOOR, 1, 1, LOG_FLOOR, LOG_FLOOR],
                                 fill="toself", fillcolor="rgba(204,121,167,0.15)", line={"width": 0}, mode="lines",
                                 name=f"naive gives NaN: exp overflows past {limit:.1f}", hoverinfo="skip"))
    for column, name, color in (("naive_error", "naive exp(x)/Σexp(x)", NAIVE),
                                ("stable_error", "max-subtracted", STABLE)):  # fmt: skip
        fig.add_trace(go.Scatter(x=m, y=sweep[column].clip(lower=LOG_FLOOR), mode="lines+markers", name=name,
                                 line={"color": color, "width": 3}, customdata=sweep[column],
                                 hovertemplate="largest logit %{x:.3g}<br>error %{customdata:.3g}<extra></extra>"))
    fig.add_vline(x=magnitude, line={"color": HIGHLIGHT, "width": 2, "dash": "dot"}, name="your logit size",
                  showlegend=True)  # fmt: skip
    fig.update_xaxes(type="log", dtick=1, title_text="largest logit", range=[0, np.log10(x_max)])
    _log_y(fig, title_text="largest |error| vs float64", range=[np.log10(LOG_FLOOR), 0.3], dtick=3)
    base_layout(fig, title=f"{dtype}: error as the logits grow", talk=talk, height=460)
    _legend(fig, -0.22)
    return fig


def overflow_bars_figure(table: pd.DataFrame, *, talk: bool = False) -> go.Figure:
    """The weights of the naive and the stable softmax for one dtype; NaN weights are marked as such."""
    x = list(range(len(table)))
    naive = table["naive"].to_numpy(dtype=float)
    fig = go.Figure()
    for y, name, color in ((np.nan_to_num(naive, nan=0.0), "naive", NAIVE),
                           (table["stable"], "max-subtracted", STABLE)):  # fmt: skip
        fig.add_trace(go.Bar(x=x, y=y, name=name, marker={"color": color}, customdata=table["logit"],
                             hovertemplate="logit %{customdata:.4g}: %{y:.4g}<extra>%{fullData.name}</extra>"))
    for i in np.flatnonzero(np.isnan(naive)):
        fig.add_annotation(x=int(i), y=0.02, text="NaN", showarrow=False, xshift=-12, textangle=-90, yanchor="bottom",
                           font={"color": NAIVE, "size": font_size(talk)})  # fmt: skip
    fig.update_yaxes(range=[0, 1.05], title_text="weight")
    fig.update_xaxes(title_text="logit", tickvals=x, ticktext=[f"{v:.3g}".replace("-", "−") for v in table["logit"]])
    base_layout(fig, title="The same 8 logits through both", talk=talk, height=460)
    _legend(fig, -0.22)
    return fig.update_layout(barmode="group")


def training_figure(
    histories: Mapping[str, pd.DataFrame], column: str, *, title: str, y_title: str, log_y: bool = False,
    uniform: float | None = None, talk: bool = False,
) -> go.Figure:  # fmt: skip
    """Each run's ``column`` against the step (``scaled`` blue, ``unscaled`` vermillion): faint at each step, bold its
    moving average ``<column>_smooth``; ``uniform`` (the loss of uniform weights), a dotted line."""
    fig = go.Figure()
    for name, h in histories.items():
        color = {"scaled": SCALED, "unscaled": UNSCALED}.get(name, NEUTRAL)
        fig.add_trace(go.Scatter(x=h["step"], y=h[column], mode="lines", line={"color": color, "width": 1},
                                 opacity=0.3, showlegend=False, hoverinfo="skip"))  # fmt: skip
        fig.add_trace(go.Scatter(x=h["step"], y=h[f"{column}_smooth"], mode="lines", name=name,
                                 line={"color": color, "width": 3},
                                 hovertemplate="step %{x}: %{y:.3g}<extra>" + name + "</extra>"))  # fmt: skip
    if uniform is not None:
        fig.add_hline(y=uniform, line={"color": THEORY, "dash": "dot", "width": 1.5}, annotation_text="uniform weights",
                      annotation_position="top right", annotation_font={"size": font_size(talk) - 3})  # fmt: skip
    fig.update_xaxes(title_text="training step")
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear", exponentformat="power" if log_y else None)
    base_layout(fig, title=title, talk=talk, height=380)
    _legend(fig)
    return fig.update_layout(margin={"t": 100})
