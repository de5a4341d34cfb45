"""Cost: the crossover and slope read from measured points, each route timed once at a small n (no
clock is read for pass/fail), and the memory model's growth with n."""

from __future__ import annotations

import pytest

from attention_core.efficient import (
    NO_COMPILE_ENV,
    ROUTES,
    CostCurves,
    RouteParams,
    RoutePoint,
    crossover_n,
    largest_n,
    measure_route,
    measure_routes,
    memory_guard,
    route_extra_bytes,
)
from attention_core.efficient.memory import MEMORY_ROUTES


def test_crossover_is_where_the_route_stays_faster():
    ns = [256, 512, 1024, 2048]
    assert crossover_n(ns, [5, 4, 3, 2], [1, 2, 4, 8]) == 1024
    assert crossover_n(ns, [1, 5, 3, 2], [2, 2, 4, 8]) == 1024  # faster at 256 once, not from there on
    assert crossover_n(ns, [1, 1, 1, 9], [2, 2, 2, 8]) is None  # slower at the largest n
    assert crossover_n(ns, [1, 1, 1, 1], [2, 2, 2, 2]) == 256
    with pytest.raises(ValueError, match="one length"):
        crossover_n(ns, [1], [1, 2])


def _point(route, n, ms):
    return RoutePoint(route=route, label=route, n=n, status="ok", median_ms=ms)


def test_curves_give_crossover_and_loglog_slope():
    points = [_point("sdpa", n, (n / 512) ** 2) for n in (256, 512, 1024, 2048)]
    points += [_point("linear", n, 0.5 * n / 512) for n in (256, 512, 1024, 2048)]
    points.append(RoutePoint(route="linear", label="linear", n=4096, status="skipped"))
    curves = CostCurves(tuple(points))
    assert curves.routes() == ("sdpa", "linear")
    assert curves.times("linear")[0] == (256, 512, 1024, 2048)
    assert curves.slope("sdpa") == pytest.approx(2.0) and curves.slope("linear") == pytest.approx(1.0)
    assert curves.crossover("linear") == 512  # 0.25 vs 0.25 at 256 is a tie, not faster


@pytest.mark.parametrize("route", [r for r in ROUTES if r != "flex-window"])
def test_every_route_measures_at_a_small_n(route):
    point = measure_route(route, 256, params=RouteParams(window=32, features=32, rank=32), heads=2, d=16,
                          min_run_time=0.0, min_samples=1, memory=False)  # fmt: skip
    assert point.status == "ok", point.note
    assert point.median_ms > 0 and point.samples >= 1 and point.backend
    assert point.label == RouteParams(window=32, features=32, rank=32).label(route)


def test_flex_without_compile_is_reported_not_timed(monkeypatch):
    monkeypatch.setenv(NO_COMPILE_ENV, "1")
    point = measure_route("flex-window", 256, heads=1, d=8, min_run_time=0.0, memory=False)
    assert point.status == "n/a" and NO_COMPILE_ENV in point.note and point.median_ms is None


def test_a_point_past_the_cap_is_skipped_with_the_reason():
    point = measure_route("sdpa-masked", 4096, cap_bytes=1 << 20, memory=False)
    assert point.status == "skipped" and "> cap" in point.note


def test_measure_routes_puts_sdpa_first_and_stops_when_asked():
    seen = []
    curves = measure_routes(["linear"], [128, 64], heads=1, d=8, min_run_time=0.0, min_samples=1, memory=False,
                            on_point=seen.append)  # fmt: skip
    assert [(p.route, p.n) for p in curves.points] == [("sdpa", 64), ("linear", 64), ("sdpa", 128), ("linear", 128)]
    assert seen == list(curves.points)
    stopped = measure_routes(["linear"], [64], should_stop=lambda: True)
    assert stopped.points == ()
    budget = measure_routes(["linear"], [64], budget_s=0.0, heads=1, d=8, memory=False)
    assert {p.status for p in budget.points} == {"skipped"}


@pytest.mark.parametrize("route", MEMORY_ROUTES)
def test_memory_grows_as_the_route_says(route):
    small, large = (route_extra_bytes(route, n, rank=64, features=64) for n in (4096, 8192))
    expected = 4.0 if route in ("sdpa-masked", "dense") else 2.0  # n² routes, n routes
    assert large / small == pytest.approx(expected, rel=0.15)


def test_memory_guard_and_largest_n():
    assert memory_guard("linear", 1024, cap_bytes=1 << 30) is None
    message = memory_guard("dense", 65536, cap_bytes=640 * 2**20)
    assert message.startswith("dense at n = 65536 needs about") and "640.0 MiB" in message
    n = largest_n("dense", 640 * 2**20)
    assert route_extra_bytes("dense", n) <= 640 * 2**20 < route_extra_bytes("dense", 2 * n)
    with pytest.raises(ValueError, match="route must be one of"):
        route_extra_bytes("reformer", 1024)
    with pytest.raises(ValueError, match="rank must be ≤ 16"):
        route_extra_bytes("linformer", 16, rank=64)
