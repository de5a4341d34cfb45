"""The benchmark's command line: the table, the CSV columns, defaults, budgets, errors, ``python -m``."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pytest
from bench_fixtures import _no_matmul_probe  # noqa: F401  (autouse: the sweeps here skip the matmul-rate probe)

from attention_core import bench
from attention_core.bench import (
    CSV_COLUMNS,
    DEFAULT_SWEEP,
    BenchConfig,
)
from attention_core.bench import run as run_mod
from attention_core.bench import sweep as sweep_mod
from attention_core.bench.cli import _parser, main

REQUIRED_COLUMNS = ["impl", "device", "dtype", "batch", "heads", "n", "d", "causal"]
REQUIRED_COLUMNS += ["median_ms", "iqr_ms", "peak_bytes", "predicted_bytes", "gflops", "status"]  # as the issue lists


# ---- the CLI ------------------------------------------------------------------------------


def test_the_cli_prints_a_table_and_writes_the_csv_columns(tmp_path):
    path = tmp_path / "out.csv"
    out = io.StringIO()
    argv = ["--impl", "textbook", "sdpa", "tiled", "--n", "16", "32", "--d", "8", "--heads", "2"]
    argv += ["--batch", "1", "--dtype", "float32", "--device", "auto", "--causal", "--csv", str(path)]
    assert main([*argv, "--min-run-time", "0", "--quiet"], stream=out) == 0
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert set(REQUIRED_COLUMNS) <= set(rows[0]) and tuple(rows[0]) == CSV_COLUMNS
    assert [(r["impl"], r["n"]) for r in rows] == [(i, n) for n in ("16", "32") for i in ("textbook", "sdpa", "tiled")]
    assert {r["status"] for r in rows} == {"ok"} and {r["causal"] for r in rows} == {"True"}
    text = out.getvalue()
    assert "median ms" in text and "wrote" in text and "tiled" in text


def test_the_cli_defaults_are_the_pages_default_sweep(monkeypatch):
    seen = {}

    def fake_sweep(spec, **kwargs):
        seen.update(spec=spec, budget=kwargs["budget_s"])
        return sweep_mod.SweepResult([], 0.0, None)

    monkeypatch.setattr("attention_core.bench.cli.run_sweep", fake_sweep)
    assert main(["--quiet"], stream=io.StringIO()) == 0
    assert seen["spec"].ns == DEFAULT_SWEEP.ns and seen["budget"] == bench.DEFAULT_BUDGET_S
    assert {"textbook", "trace"} <= set(DEFAULT_SWEEP.impls)  # both baselines, side by side
    args = _parser().parse_args([])
    assert tuple(args.impl) == DEFAULT_SWEEP.impls
    assert (args.d, args.heads, args.batch, args.dtype, args.causal) == (
        DEFAULT_SWEEP.d,
        DEFAULT_SWEEP.heads,
        DEFAULT_SWEEP.batch,
        DEFAULT_SWEEP.dtype,
        DEFAULT_SWEEP.causal,
    )


def test_sizes_named_on_the_cli_all_run_unless_a_budget_is_given(monkeypatch):
    budgets = []

    def fake_sweep(spec, **kwargs):
        budgets.append(kwargs["budget_s"])
        return sweep_mod.SweepResult([], 0.0, None)

    monkeypatch.setattr("attention_core.bench.cli.run_sweep", fake_sweep)
    for argv in (["--n", "1024", "4096"], ["--n", "64", "--budget", "5"], ["--budget", "0"]):
        assert main([*argv, "--quiet"], stream=io.StringIO()) == 0
    assert budgets == [None, 5.0, None]


def test_a_sweep_with_explicit_sizes_skips_none_of_them(monkeypatch):
    """The issue's case: tiled at the largest n was dropped by a budget nobody asked for."""
    monkeypatch.setattr("attention_core.bench.cli.DEFAULT_BUDGET_S", 1e-9)  # a budget would skip them all
    out = io.StringIO()
    argv = ["--impl", "textbook", "tiled", "--n", "16", "64", "--d", "4", "--heads", "1", "--min-run-time", "0"]
    assert main([*argv, "--quiet"], stream=out) == 0
    assert "skipped" not in out.getvalue() and out.getvalue().count(" ok") == 4


def test_the_table_marks_rows_timed_from_fewer_than_three_samples():
    row = run_mod._result(BenchConfig("textbook", 16, d=4, heads=1), 1, "ok", median_ms=1.0, iqr_ms=0.0, samples=1)
    table = bench.format_table([row])
    assert "1*" in table and "fewer than 3 timed samples" in table
    full = run_mod._result(BenchConfig("textbook", 16, d=4, heads=1), 1, "ok", median_ms=1.0, iqr_ms=0.0, samples=3)
    assert "fewer than" not in bench.format_table([full])


def test_the_cli_explains_a_bad_argument(capsys):
    assert main(["--n", "0", "--quiet"], stream=io.StringIO()) == 2
    assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--impl", "fastest"])


def test_python_dash_m_runs_the_cli(tmp_path):
    import subprocess

    path = tmp_path / "m.csv"
    cmd = [sys.executable, "-m", "attention_core.bench", "--impl", "tiled", "--n", "16", "--d", "4"]
    cmd += ["--heads", "1", "--min-run-time", "0", "--quiet", "--csv", str(path)]
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False, cwd=root)
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning" not in done.stderr  # no double import of the module
    assert path.read_text().startswith("impl,device,dtype")


def test_a_sweep_started_on_a_busy_cpu_says_its_timings_are_disturbed(monkeypatch):
    assert sweep_mod.SweepResult([], 0.0, None, load_per_core=3.0).disturbed
    assert not sweep_mod.SweepResult([], 0.0, None, load_per_core=0.4).disturbed
    assert not sweep_mod.SweepResult([], 0.0, None).disturbed  # unknown load: no claim either way
    monkeypatch.setattr(sweep_mod, "cpu_load_per_core", lambda: 9.0)
    out = io.StringIO()
    assert main(["--impl", "tiled", "--n", "16", "--d", "4", "--heads", "1", "--min-run-time", "0"], stream=out) == 0
    assert "disturbed" in out.getvalue()


def test_older_names_still_run_under_todays() -> None:
    from attention_core.bench import IMPLEMENTATIONS, RENAMED, BenchConfig, get_impl

    for old, new in RENAMED.items():
        assert BenchConfig(old, 64).impl == new and get_impl(old) is IMPLEMENTATIONS[new]
        assert _parser().parse_args(["--impl", old]).impl == [old]  # the CLI takes it; the config renames it


def test_a_route_with_its_knob_runs_from_the_command_line() -> None:
    out = io.StringIO()
    argv = ["--impl", "sdpa", "performer(32)", "--n", "128", "--d", "16", "--heads", "1", "--min-run-time", "0"]
    assert main([*argv, "--quiet"], stream=out) == 0
    assert any(line.split()[:1] == ["performer(32)"] and " ok " in line for line in out.getvalue().splitlines())
    with pytest.raises(SystemExit):
        _parser().parse_args(["--impl", "performer(x)"])
