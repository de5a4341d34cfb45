"""Sweeps and fits: order, progress, cancel, the time budget and the cache; the log-log fits.

The fits leave out launch-bound sizes, so a GPU's flat small-n timings never read as a law.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import pytest
from bench_fixtures import _no_matmul_probe  # noqa: F401  (autouse: the sweeps here skip the matmul-rate probe)

from attention_core.bench import (
    BenchConfig,
    BenchResult,
    SweepSpec,
    fit_loglog_slope,
    growth_start,
    run_sweep,
    scaling_fits,
    speedups,
)
from attention_core.bench import sweep as sweep_mod

# ---- sweeps: budget, cancel, progress, cache ----------------------------------------------


def test_a_sweep_runs_n_outermost_and_reports_progress():
    events = []
    spec = SweepSpec(("textbook", "tiled"), (64, 32), d=8, heads=1)
    result = run_sweep(spec, min_run_time=0.0, progress=events.append, cap_bytes=2**30)
    assert [(r.impl, r.n) for r in result.rows] == [("textbook", 32), ("tiled", 32), ("textbook", 64), ("tiled", 64)]
    assert [(e.done, e.result is None) for e in events] == [(i // 2 + i % 2, i % 2 == 0) for i in range(8)]
    assert all(r.status == "ok" and r.max_error is not None and r.max_error < 1e-5 for r in result.rows)
    assert result.stopped is None and result.peak_gflops == 100.0 and result.env["threads"]


def test_a_cancelled_sweep_stops_cleanly():
    seen = []
    spec = SweepSpec(("tiled",), (16, 32, 64, 128), d=8, heads=1)
    result = run_sweep(spec, min_run_time=0.0, should_stop=lambda: len(seen) >= 2, progress=seen.append)
    assert [r.status for r in result.rows] == ["ok", "cancelled", "cancelled", "cancelled"]
    assert result.stopped == "cancelled"


def test_a_used_up_budget_skips_the_rest(monkeypatch):
    spec = SweepSpec(("textbook", "tiled"), (16, 32), d=8, heads=1)
    result = run_sweep(spec, budget_s=1e-9, min_run_time=0.0)
    assert {r.status for r in result.rows} == {"skipped"}
    assert all("time budget" in r.note for r in result.rows) and result.stopped == "budget"


def test_the_budget_skips_a_config_predicted_to_overrun():
    prev = {"textbook": (1024, 2.0)}  # 2 s per call at n = 1024
    config = BenchConfig("textbook", 4096, d=64, heads=8)
    why = sweep_mod._over_budget(config, prev, sweep_mod.time.perf_counter() + 10, 10.0, 0.1)
    assert why is not None and why.startswith("would take about 128 s")  # 4 calls of 2 s × (4096/1024)²


def test_cached_rows_are_reused_without_measuring(monkeypatch):
    spec = SweepSpec(("tiled",), (16,), d=8, heads=1)
    first = run_sweep(spec, min_run_time=0.0).rows[0]
    monkeypatch.setattr(sweep_mod, "run_config", lambda *a, **k: pytest.fail("measured again"))
    again = run_sweep(spec, cached=lambda c: first if c.n == 16 else None)
    assert again.rows == [first]


def test_unknown_implementations_and_bad_specs_raise():
    with pytest.raises(ValueError, match="impl"):
        run_sweep(SweepSpec(("fastest",), (16,)))
    with pytest.raises(ValueError, match="at least one"):
        SweepSpec((), (16,)).configs()
    with pytest.raises(ValueError, match="n"):
        BenchConfig("textbook", 0)
    with pytest.raises(ValueError, match="dtype"):
        BenchConfig("textbook", 16, dtype="int8")
    with pytest.raises(ValueError, match="device"):
        BenchConfig("textbook", 16, device="tpu")


# ---- fits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("exponent", [1.0, 1.97, 2.0, 3.0])
def test_the_slope_fit_recovers_a_known_exponent(exponent):
    ns = [128 * 2**i for i in range(7)]
    wobble = [1.0, 1.03, 0.98, 1.01, 0.99, 1.02, 1.0]  # ±3 % noise, as real timings have
    values = [5e-6 * n**exponent * w for n, w in zip(ns, wobble, strict=True)]
    slope, intercept = fit_loglog_slope(ns, values)
    assert slope == pytest.approx(exponent, abs=0.02)
    assert math.exp(intercept) == pytest.approx(5e-6, rel=0.1)


def test_the_slope_fit_refuses_what_it_cannot_fit():
    with pytest.raises(ValueError, match="two different"):
        fit_loglog_slope([8, 8], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        fit_loglog_slope([8, 16], [0.0, 2.0])
    with pytest.raises(ValueError, match="length"):
        fit_loglog_slope([8, 16, 32], [1.0, 2.0])


def _row(impl: str, n: int, ms: float | None, mem: int | None, status: str = "ok") -> BenchResult:
    return BenchResult(**asdict(BenchConfig(impl, n, heads=1)), median_ms=ms, iqr_ms=0.0, peak_bytes=mem,
                       predicted_bytes=0, gflops=1.0, status=status)  # fmt: skip


def _launch_bound(ns, launch_ms: float, per_n2_ms: float) -> list[float]:
    """A GPU's time per call: a fixed launch cost plus n² work."""
    return [launch_ms + per_n2_ms * n * n for n in ns]


def test_growth_start_drops_the_launch_bound_sizes():
    ns = [512, 1024, 2048, 4096, 8192, 16384]
    times = _launch_bound(ns, 0.5, 1e-7)  # flat near 0.5 ms until n² work overtakes the launches
    start = growth_start(ns, times)
    assert ns[start] == 2048  # 2048 → 4096 (0.92 → 2.18 ms) is the first step that grows at least as n
    assert growth_start(ns, [1e-6 * n * n for n in ns]) == 0  # pure n²: everything grows
    assert growth_start(ns, [0.3] * 6) == 5  # flat: no step grows
    with pytest.raises(ValueError, match="increase"):
        growth_start([1024, 512], [1.0, 2.0])


def test_a_launch_bound_range_gets_no_exponent():
    """The GPU case of the issue: n = 512…2048 gave "textbook ∝ n^0.80", which reads as a law."""
    ns = [512, 1024, 2048]
    times = [0.20, 0.33, 0.61]  # ∝ n^0.80 over the range, like the H100's
    assert fit_loglog_slope(ns, times)[0] == pytest.approx(0.80, abs=0.03)  # what the old fit printed
    fit = scaling_fits([_row("textbook", n, t, 4 * n * n) for n, t in zip(ns, times, strict=True)])["textbook"]
    assert fit.time_slope is None and fit.launch_bound_below is None and fit.launch_bound_to == 2048
    assert "launch-bound at every n measured (up to 2048)" in fit.describe() and "∝ n^0" not in fit.describe()
    times = [0.20, 0.22, 0.60]  # the last step grows (n^1.4): still too short to be a law
    fit = scaling_fits([_row("textbook", n, t, 4 * n * n) for n, t in zip(ns, times, strict=True)])["textbook"]
    assert fit.time_slope is None and fit.launch_bound_below == 1024
    assert "launch-bound below n = 1024" in fit.describe()


def test_the_exponent_is_fitted_where_time_grows():
    ns = [512, 1024, 2048, 4096, 8192, 16384]
    wobble = [1.0, 1.02, 0.98, 1.01, 0.99, 1.02]
    times = [t * w for t, w in zip(_launch_bound(ns, 0.5, 1e-7), wobble, strict=True)]
    fit = scaling_fits([_row("sdpa", n, t, 64 * n) for n, t in zip(ns, times, strict=True)])["sdpa"]
    assert (fit.n_from, fit.n_to, fit.launch_bound_to) == (4096, 16384, 1024)
    assert fit.time_slope == pytest.approx(2.0, abs=0.25)  # the fitted sizes still carry a little launch cost
    assert fit.describe().startswith("sdpa: time ∝ n^") and "launch-bound up to n = 1024" in fit.describe()
    # On the CPU nothing is launch-bound at these sizes: every point is kept, as before.
    cpu = scaling_fits([_row("textbook", n, 1e-4 * n**2, 24 * n * n) for n in (512, 1024, 2048)])["textbook"]
    assert cpu.time_slope == pytest.approx(2.0) and cpu.launch_bound_to is None and cpu.n_from == 512


def test_scaling_fits_use_the_largest_ok_points_per_implementation():
    rows = [_row("textbook", n, 1e-4 * n**2, 24 * n * n) for n in (256, 512, 1024, 2048)]
    rows += [_row("textbook", 128, 50.0, 10)]  # an overhead-dominated small n, below min_n
    rows += [_row("tiled", n, 1e-4 * n**2, 4096 * n) for n in (512, 1024)]
    rows += [_row("tiled", 2048, None, None, status="oom")]
    fits = scaling_fits(rows, tail=3, min_n=256)
    assert fits["textbook"].time_slope == pytest.approx(2.0) and fits["textbook"].memory_slope == pytest.approx(2.0)
    assert (fits["textbook"].n_from, fits["textbook"].n_to) == (512, 2048)
    assert fits["tiled"].memory_slope == pytest.approx(1.0)
    assert "textbook" not in scaling_fits(rows[:1] + rows[-4:-3], min_n=256)  # one point is not a fit
    assert speedups(rows)[0] == {"impl": "tiled", "n": 512, "speedup": pytest.approx(1.0)}
