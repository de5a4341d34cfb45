"""Figures of the benchmark page: time, memory, FLOP rate and speed-up against n.

Each builder takes the benchmark's rows as plain dicts (the CSV's columns: ``impl``,
``n``, ``median_ms``, ``iqr_ms``, ``peak_bytes``, ``predicted_bytes``, ``gflops``,
``status`` …) and returns a ``go.Figure``. Only rows with status ``ok`` are drawn.
Every implementation keeps its colour from ``IMPL_COLORS`` on every figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from .style import IMPL_COLORS, THEORY, base_layout, font_size

Row = Mapping[str, Any]
MIB = 2**20


def _color(impl: str) -> str:
    return IMPL_COLORS.get(impl, THEORY)


def _by_impl(rows: Sequence[Row], *, ok_only: bool = True) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if ok_only and r.get("status") != "ok":
            continue
        groups.setdefault(str(r["impl"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["n"]) for k, v in groups.items()}


def _log_axes(
    fig: go.Figure, ns: Sequence[int], y_title: str, *, talk: bool, ys: Sequence[float] = (), log_y: bool = True
) -> None:
    ticks = sorted(set(ns))
    size = font_size(talk)
    fig.update_xaxes(
        type="log",
        title_text="sequence length n",
        tickvals=ticks,
        ticktext=[str(t) for t in ticks],
        tickfont={"size": size},
        title_font={"size": size},
    )
    fig.update_yaxes(
        type="log" if log_y else "linear", title_text=y_title, tickfont={"size": size}, title_font={"size": size}
    )
    positive = [y for y in ys if y and y > 0]
    if log_y and positive:
        # Label the decades only (0.1, 1, 10) over a wide range, else 1-2-5 steps: never every digit.
        fig.update_yaxes(dtick=1 if max(positive) / min(positive) >= 100 else "D2")


def _empty(fig: go.Figure, text: str, talk: bool) -> go.Figure:
    fig.add_annotation(
        text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font={"size": font_size(talk)}
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def time_figure(
    rows: Sequence[Row],
    fits: Mapping[str, tuple[float, float, int, int]] | None = None,
    *,
    talk: bool = False,
) -> go.Figure:
    """Median time per call against n on log-log axes, the IQR as error bars.

    ``fits[impl] = (slope, intercept, n_from, n_to)`` of log(ms) = slope·log(n) + intercept
    draws the fitted line over its range and puts "impl ∝ n^slope" in the legend.
    """
    fig = go.Figure()
    groups = _by_impl(rows)
    if not groups:
        return base_layout(_empty(fig, "No timed configuration yet", talk), title="Time per call", talk=talk)
    fits = fits or {}
    for impl, rs in groups.items():
        ns = [r["n"] for r in rs]
        fit = fits.get(impl)
        name = f"{impl} ∝ n^{fit[0]:.2f}" if fit else impl
        fig.add_trace(
            go.Scatter(
                x=ns,
                y=[r["median_ms"] for r in rs],
                error_y={"type": "data", "array": [r["iqr_ms"] / 2 for r in rs], "visible": True},
                mode="lines+markers",
                name=name,
                legendgroup=impl,
                line={"color": _color(impl), "width": 3},
                marker={"size": 9},
                customdata=[[r["iqr_ms"], r.get("samples", "")] for r in rs],
                hovertemplate=f"{impl}<br>n = %{{x}}<br>median %{{y:.3g}} ms"
                "<br>IQR %{customdata[0]:.2g} ms, %{customdata[1]} samples<extra></extra>",
            )
        )
        if fit:
            slope, intercept, lo, hi = fit
            xs = [lo, hi]
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=[pow(x, slope) * math.exp(intercept) for x in xs],
                    mode="lines",
                    line={"color": _color(impl), "dash": "dot", "width": 2},
                    legendgroup=impl,
                    showlegend=False,
                    hoverinfo="skip",
                )
            )
    every = [r for rs in groups.values() for r in rs]
    _log_axes(fig, [r["n"] for r in every], "median time per call (ms)", talk=talk, ys=[r["median_ms"] for r in every])
    return base_layout(fig, title="Time per call (log-log: slope 2 means n²)", talk=talk)


def memory_figure(rows: Sequence[Row], *, talk: bool = False) -> go.Figure:
    """Peak extra memory against n: measured as points, the analytic prediction as a dashed line."""
    fig = go.Figure()
    groups = _by_impl(rows)
    if not groups:
        return base_layout(_empty(fig, "No measured configuration yet", talk), title="Peak extra memory", talk=talk)
    for impl, rs in groups.items():
        ns = [r["n"] for r in rs]
        fig.add_trace(
            go.Scatter(
                x=ns,
                y=[r["predicted_bytes"] / MIB for r in rs],
                mode="lines",
                name=f"{impl} predicted",
                legendgroup=impl,
                line={"color": _color(impl), "dash": "dash", "width": 2},
                hovertemplate=f"{impl} predicted<br>n = %{{x}}<br>%{{y:.3g}} MiB<extra></extra>",
            )
        )
        measured = [r for r in rs if r.get("peak_bytes") not in (None, "") and r["peak_bytes"] > 0]
        if measured:
            fig.add_trace(
                go.Scatter(
                    x=[r["n"] for r in measured],
                    y=[r["peak_bytes"] / MIB for r in measured],
                    mode="markers",
                    name=f"{impl} measured",
                    legendgroup=impl,
                    marker={"color": _color(impl), "size": 12, "symbol": "circle"},
                    hovertemplate=f"{impl} measured<br>n = %{{x}}<br>%{{y:.3g}} MiB<extra></extra>",
                )
            )
    every = [r for rs in groups.values() for r in rs]
    ys = [r["predicted_bytes"] / MIB for r in every] + [(r.get("peak_bytes") or 0) / MIB for r in every]
    _log_axes(fig, [r["n"] for r in every], "peak extra memory (MiB)", talk=talk, ys=ys)
    return base_layout(fig, title="Peak memory beyond the inputs: measured (dots) and predicted (dashes)", talk=talk)


def rate_figure(rows: Sequence[Row], peak_gflops: float | None = None, *, talk: bool = False) -> go.Figure:
    """Achieved GFLOP/s against n, with this device's measured matmul rate as a ceiling line."""
    fig = go.Figure()
    groups = _by_impl(rows)
    if not groups:
        return base_layout(_empty(fig, "No timed configuration yet", talk), title="FLOP rate", talk=talk)
    for impl, rs in groups.items():
        pct = [r.get("pct_of_peak") for r in rs]
        fig.add_trace(
            go.Scatter(
                x=[r["n"] for r in rs],
                y=[r["gflops"] for r in rs],
                mode="lines+markers",
                name=impl,
                line={"color": _color(impl), "width": 3},
                marker={"size": 9},
                customdata=[[p if p is not None else float("nan")] for p in pct],
                hovertemplate=f"{impl}<br>n = %{{x}}<br>%{{y:.3g}} GFLOP/s"
                "<br>%{customdata[0]:.0f} % of the matmul peak<extra></extra>",
            )
        )
    if peak_gflops:
        fig.add_hline(
            y=peak_gflops,
            line={"color": THEORY, "dash": "dash", "width": 2},
            annotation_text=f"matmul peak {peak_gflops:.0f} GFLOP/s = 100 %",
            annotation_position="top left",
            annotation_font={"size": font_size(talk) - 2},
        )
    ns = [r["n"] for rs in groups.values() for r in rs]
    _log_axes(fig, ns, "GFLOP/s (4·B·H·n²·d per call)", talk=talk, log_y=False)
    fig.update_yaxes(rangemode="tozero")
    return base_layout(fig, title="Achieved FLOP rate", talk=talk)


def speedup_figure(speedups: Sequence[Row], *, baseline: str = "naive", talk: bool = False) -> go.Figure:
    """Baseline time ÷ each implementation's time, against n (rows: ``impl``, ``n``, ``speedup``)."""
    fig = go.Figure()
    groups: dict[str, list[Row]] = {}
    for r in speedups:
        groups.setdefault(str(r["impl"]), []).append(r)
    if not groups:
        text = f"Include {baseline} and another implementation to see speed-ups"
        return base_layout(_empty(fig, text, talk), title=f"Speed-up over {baseline}", talk=talk)
    for impl, rs in groups.items():
        rs = sorted(rs, key=lambda r: r["n"])
        fig.add_trace(
            go.Scatter(
                x=[r["n"] for r in rs],
                y=[r["speedup"] for r in rs],
                mode="lines+markers",
                name=impl,
                line={"color": _color(impl), "width": 3},
                marker={"size": 9},
                hovertemplate=f"{impl}<br>n = %{{x}}<br>%{{y:.3g}}× faster than {baseline}<extra></extra>",
            )
        )
    fig.add_hline(y=1.0, line={"color": _color(baseline), "dash": "dot", "width": 2})
    every = [r for rs in groups.values() for r in rs]
    _log_axes(fig, [r["n"] for r in every], f"× faster than {baseline}", talk=talk, ys=[r["speedup"] for r in every])
    return base_layout(fig, title=f"Speed-up over {baseline} (above 1 = faster)", talk=talk)
