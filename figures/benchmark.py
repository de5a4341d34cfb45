"""Figures of the benchmark page: time, memory, FLOP rate and speed-up against n.

Each builder takes the benchmark's rows as plain dicts (the CSV's columns) and draws those with status ``ok``, each
implementation in its colour from ``IMPL_COLORS``.
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
    """An entry's colour; a route with its knob (``performer(64)``) keeps its route's."""
    return IMPL_COLORS.get(impl, IMPL_COLORS.get(impl.partition("(")[0], THEORY))


def _by_impl(rows: Sequence[Row], *, ok_only: bool = True) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if not ok_only or r.get("status") == "ok":
            groups.setdefault(str(r["impl"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["n"]) for k, v in groups.items()}


def _line(fig: go.Figure, impl: str, rs: Sequence[Row], ys: Sequence[float], hover: str, **kw: Any) -> None:
    """One implementation's points in its colour, joined unless ``mode`` says otherwise; ``hover`` follows
    "impl<br>n = …<br>"."""
    style = {"mode": "lines+markers", "name": impl, "line": {"color": _color(impl), "width": 3}, "marker": {"size": 9}}
    fig.add_scatter(x=[r["n"] for r in rs], y=ys, legendgroup=impl,
                    hovertemplate=f"{impl}<br>n = %{{x}}<br>{hover}<extra></extra>", **(style | kw))  # fmt: skip


def _finish(fig: go.Figure, groups: dict[str, list[Row]], y_title: str, title: str, *, talk: bool, empty: str,
            log_y: bool = True) -> go.Figure:  # fmt: skip
    """Log axes over n (ticks at the measured n, the y ticks fitted to what is drawn), the y axis titled, the shared
    layout; without rows, ``empty`` says why there is nothing to draw."""
    if not groups:
        fig.add_annotation(text=empty, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                           font={"size": font_size(talk)})  # fmt: skip
        return base_layout(fig.update_xaxes(visible=False).update_yaxes(visible=False), title=title, talk=talk)
    ticks, size = sorted({r["n"] for rs in groups.values() for r in rs}), {"size": font_size(talk)}
    fig.update_xaxes(type="log", title_text="sequence length n", tickvals=ticks, ticktext=[str(t) for t in ticks],
                     tickfont=size, title_font=size)  # set here: Streamlit's theme would make them smaller
    fig.update_yaxes(type="log" if log_y else "linear", title_text=y_title, tickfont=size, title_font=size)
    positive = [y for trace in fig.data for y in trace.y or () if y and y > 0]
    if log_y and positive:
        # Label the decades only (0.1, 1, 10) over a wide range, else 1-2-5 steps written in full (plotly's
        # "D2" writes 0.5 as "5"): never every digit.
        lo, hi = min(positive), max(positive)
        if hi / lo >= 100:
            fig.update_yaxes(dtick=1)
        else:
            steps = [m * 10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                     for m in (1, 2, 5)]  # fmt: skip
            fig.update_yaxes(tickvals=steps, ticktext=[f"{v:g}" for v in steps])
    return base_layout(fig, title=title, talk=talk)


def time_figure(
    rows: Sequence[Row], fits: Mapping[str, tuple[float, float, int, int]] | None = None, *, talk: bool = False,
    what: str = "",
) -> go.Figure:  # fmt: skip
    """Median time per call against n on log-log axes, the IQR as error bars; ``fits[impl] = (slope, intercept,
    n_from, n_to)`` of log(ms) draws the fitted line, "impl ∝ n^slope" in the legend. ``what`` names the pass timed."""
    groups, fits, fig = _by_impl(rows), fits or {}, go.Figure()
    for impl, rs in groups.items():
        fit = fits.get(impl)
        _line(fig, impl, rs, [r["median_ms"] for r in rs],
              "median %{y:.3g} ms<br>IQR %{customdata[0]:.2g} ms, %{customdata[1]} samples",
              name=f"{impl} ∝ n^{fit[0]:.2f}" if fit else impl,
              error_y={"type": "data", "array": [r["iqr_ms"] / 2 for r in rs], "visible": True},
              customdata=[[r["iqr_ms"], r.get("samples", "")] for r in rs])  # fmt: skip
        if fit:
            slope, intercept, lo, hi = fit
            fig.add_scatter(x=[lo, hi], y=[pow(x, slope) * math.exp(intercept) for x in (lo, hi)], mode="lines",
                            line={"color": _color(impl), "dash": "dot", "width": 2}, legendgroup=impl,
                            showlegend=False, hoverinfo="skip")  # fmt: skip
    title = f"Time per {what} call (log-log: slope 2 means n²)".replace("  ", " ")
    return _finish(fig, groups, "median time per call (ms)", title, talk=talk, empty="No timed configuration yet")


def memory_figure(rows: Sequence[Row], *, talk: bool = False) -> go.Figure:
    """Peak extra memory against n: measured as points, the analytic prediction as a dashed line."""
    groups, fig = _by_impl(rows), go.Figure()
    for impl, rs in groups.items():
        _line(fig, impl, rs, [r["predicted_bytes"] / MIB for r in rs], "predicted %{y:.3g} MiB", mode="lines",
              name=f"{impl} predicted", line={"color": _color(impl), "dash": "dash", "width": 2})  # fmt: skip
        measured = [r for r in rs if r.get("peak_bytes") not in (None, "") and r["peak_bytes"] > 0]
        if measured:
            _line(fig, impl, measured, [r["peak_bytes"] / MIB for r in measured], "measured %{y:.3g} MiB",
                  mode="markers", name=f"{impl} measured", marker={"color": _color(impl), "size": 12})  # fmt: skip
    return _finish(fig, groups, "peak extra memory (MiB)", "Peak memory beyond the inputs: measured (dots) and "
                   "predicted (dashes)", talk=talk, empty="No measured configuration yet")  # fmt: skip


def rate_figure(rows: Sequence[Row], peak_gflops: float | None = None, *, talk: bool = False,
                flops: str = "4·B·H·n²·d") -> go.Figure:  # fmt: skip
    """Achieved GFLOP/s against n, with this device's measured matmul rate as a ceiling line; ``flops`` is
    the count per call the rates divide (the forward's 4·B·H·n²·d, 10 for the backward, 14 for both)."""
    groups, fig = _by_impl(rows), go.Figure()
    for impl, rs in groups.items():
        _line(fig, impl, rs, [r["gflops"] for r in rs], "%{y:.3g} GFLOP/s<br>%{customdata[0]:.0f} % of the matmul peak",
              customdata=[[math.nan if r.get("pct_of_peak") is None else r["pct_of_peak"]] for r in rs])  # fmt: skip
    if peak_gflops and groups:
        fig.add_hline(
            y=peak_gflops, line={"color": THEORY, "dash": "dash", "width": 2}, annotation_position="top left",
            annotation_text=f"matmul peak {peak_gflops:.0f} GFLOP/s = 100 %",
            annotation_font={"size": font_size(talk) - 2},
        )  # fmt: skip
    fig.update_yaxes(rangemode="tozero")
    return _finish(fig, groups, f"GFLOP/s ({flops} per call)", "Achieved FLOP rate",
                   talk=talk, empty="No timed configuration yet", log_y=False)  # fmt: skip


def speedup_figure(speedups: Sequence[Row], *, baseline: str = "textbook", talk: bool = False) -> go.Figure:
    """Baseline time ÷ each implementation's time, against n (rows: ``impl``, ``n``, ``speedup``)."""
    groups, fig = _by_impl(speedups, ok_only=False), go.Figure()
    for impl, rs in groups.items():
        _line(fig, impl, rs, [r["speedup"] for r in rs], f"%{{y:.3g}}× faster than {baseline}")
    if groups:
        fig.add_hline(y=1.0, line={"color": _color(baseline), "dash": "dot", "width": 2})
    return _finish(fig, groups, f"× faster than {baseline}", f"Speed-up over {baseline} (above 1 = faster)",
                   talk=talk, empty=f"Include {baseline} and another implementation to see speed-ups")  # fmt: skip
