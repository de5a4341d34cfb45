"""The efficient routes with their knobs in the benchmark: names that carry a knob, the crossover and slope
read from result rows (no clock is read for pass/fail), and the memory model's growth with n."""

from __future__ import annotations

import pytest
from bench_fixtures import _no_matmul_probe  # noqa: F401  (autouse: the sweeps here skip the matmul-rate probe)

from attention_core.bench import (
    ROUTES,
    BenchConfig,
    BenchResult,
    RouteParams,
    SweepSpec,
    crossover_n,
    get_impl,
    parse_route,
    run_config,
    run_sweep,
    scaling_fits,
)
from attention_core.bench.memory_models import route_extra_bytes
from attention_core.efficient import NO_COMPILE_ENV


def _row(impl: str, n: int, ms: float | None, status: str = "ok") -> BenchResult:
    return BenchResult(impl=impl, device="cpu", dtype="float32", batch=1, heads=1, n=n, d=8, causal=False,
                       median_ms=ms, predicted_bytes=0, status=status)  # fmt: skip


def test_crossover_is_where_the_route_stays_faster() -> None:
    def rows(route_ms: list[float], sdpa_ms: list[float]) -> list[BenchResult]:
        ns = (256, 512, 1024, 2048)
        return [_row("sdpa", n, b) for n, b in zip(ns, sdpa_ms, strict=True)] + [
            _row("linear", n, t) for n, t in zip(ns, route_ms, strict=True)
        ]

    assert crossover_n(rows([5, 4, 3, 2], [1, 2, 4, 8]), "linear") == 1024
    assert crossover_n(rows([1, 5, 3, 2], [2, 2, 4, 8]), "linear") == 1024  # faster at 256 once, not from there on
    assert crossover_n(rows([1, 1, 1, 9], [2, 2, 2, 8]), "linear") is None  # slower at the largest n
    assert crossover_n(rows([1, 1, 1, 1], [2, 2, 2, 2]), "linear") == 256
    skipped = [*rows([5, 4, 3, 2], [1, 2, 4, 8]), _row("linear", 4096, None, "skipped")]
    assert crossover_n(skipped, "linear") == 1024  # a skipped row is no point


def test_one_slope_fit_serves_the_routes_too() -> None:
    ns = (512, 1024, 2048, 4096)
    rows = [_row("sdpa", n, (n / 512) ** 2) for n in ns] + [_row("linear", n, 0.5 * n / 512) for n in ns]
    fits = scaling_fits(rows)
    assert fits["sdpa"].time_slope == pytest.approx(2.0) and fits["linear"].time_slope == pytest.approx(1.0)


def test_a_route_name_carries_its_knob() -> None:
    assert parse_route("performer(64)") == ("performer", RouteParams(features=64))
    assert parse_route("flex-window") == ("flex-window", RouteParams())
    assert parse_route("linear(3)") is None and parse_route("reformer") is None and parse_route("sdpa") is None
    assert get_impl("linformer(32)").name == "linformer(32)" == RouteParams(rank=32).label("linformer")
    assert "32 orthogonal" in get_impl("performer(32)").description
    with pytest.raises(ValueError, match="impl must be one of"):
        get_impl("performer(x)")


@pytest.mark.parametrize("route", [r for r in ROUTES if r != "flex-window"])
def test_every_route_measures_at_a_small_n_with_its_knob(route: str) -> None:
    name = RouteParams(window=32, features=32, rank=32).label(route)
    row = run_config(BenchConfig(name, 256, d=16, heads=2), min_run_time=0.0, min_samples=1, cap_bytes=2**30)
    assert row.status == "ok", row.note
    assert row.impl == name and row.median_ms > 0 and row.samples >= 1 and row.backend


def test_flex_without_compile_is_reported_not_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NO_COMPILE_ENV, "1")
    row = run_config(BenchConfig("flex-window(64)", 256, d=8, heads=1), min_run_time=0.0, cap_bytes=2**30)
    assert row.status == "n/a" and NO_COMPILE_ENV in row.note and row.median_ms is None


def test_a_point_past_the_cap_is_skipped_with_the_reason() -> None:
    row = run_config(BenchConfig("sdpa-masked", 4096), cap_bytes=1 << 20)
    assert row.status == "skipped" and "> cap" in row.note


def test_the_page_sweep_puts_sdpa_first_and_stops_when_asked() -> None:
    spec = SweepSpec(("sdpa", "linear"), (128, 64), d=8, heads=1)
    seen = []
    result = run_sweep(spec, min_run_time=0.0, check_correctness=False, progress=seen.append)
    assert [(r.impl, r.n) for r in result.rows] == [("sdpa", 64), ("linear", 64), ("sdpa", 128), ("linear", 128)]
    assert [p.result for p in seen if p.result is not None] == result.rows
    stopped = run_sweep(spec, should_stop=lambda: True, check_correctness=False)
    assert {r.status for r in stopped.rows} == {"cancelled"}


@pytest.mark.parametrize("route", ROUTES)
def test_memory_grows_as_the_route_says(route: str) -> None:
    small, large = (route_extra_bytes(route, BenchConfig(route, n), rank=64, features=64) for n in (4096, 8192))
    expected = 4.0 if route == "sdpa-masked" else 2.0  # n² routes, n routes
    assert large / small == pytest.approx(expected, rel=0.15)
