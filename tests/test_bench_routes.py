"""The efficient routes as benchmark entries (attention_core/bench/routes.py): each computes what it says,
against an explicit float64 form of its own formula; its memory model is the core's; the benchmark says
its error as an approximation instead of judging it by FlashAttention's rule; the CLI runs it."""

from __future__ import annotations

import io
import math

import pytest
import torch
import torch.nn.functional as F
from bench_fixtures import _no_matmul_probe  # noqa: F401  (autouse: the sweeps here skip the matmul-rate probe)

from attention_core import reference_attention
from attention_core.bench import EXACT, IMPLEMENTATIONS, BenchConfig, SweepSpec, make_inputs, run_config, run_sweep
from attention_core.bench.cli import main
from attention_core.efficient.flex import NO_COMPILE_ENV, flex_available
from attention_core.efficient.lowrank import linformer_projections
from attention_core.efficient.performer import orthogonal_features
from attention_core.heads import repeat_kv

ROUTES = ("sdpa-masked", "flex-window", "linear", "performer", "linformer")


def run(name: str, config: BenchConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The entry's output on the config's inputs, and those inputs with K and V repeated, in float64."""
    impl = IMPLEMENTATIONS[name]
    q, k, v = make_inputs(config)
    out = impl.run(impl.prepare(q, k, v), config.causal)
    h = config.heads
    return out.double(), q.double(), repeat_kv(k, h).double(), repeat_kv(v, h).double()


def weighted(scores_or_weights: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Non-negative weights (..., n, n), causal-masked if asked, normalised per row, times v."""
    w = scores_or_weights
    if causal:
        w = w.masked_fill(~torch.ones(w.shape[-2:], dtype=torch.bool).tril(), 0.0)
    return (w / w.sum(dim=-1, keepdim=True)) @ v


def test_the_routes_join_the_registry_and_only_the_exact_entries_are_judged() -> None:
    assert set(IMPLEMENTATIONS) - set(EXACT) == set(ROUTES)
    for name in ROUTES:
        impl = IMPLEMENTATIONS[name]
        assert not impl.exact and impl.description.startswith("Not exact")
    assert all(IMPLEMENTATIONS[name].exact for name in EXACT)


@pytest.mark.parametrize("causal", [False, True])
def test_linear_is_elu_plus_one_features_written_out(causal: bool) -> None:
    out, q, k, v = run("linear", config := BenchConfig("linear", 80, d=16, heads=4, kv_heads=2, causal=causal))
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    expected = weighted(phi_q @ phi_k.transpose(-2, -1), v, causal)  # (B, H, n, d)
    assert out.shape == (1, 4, 80, 16) and config.grouped
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("causal", [False, True])
def test_performer_is_favor_plus_with_256_features_written_out(causal: bool) -> None:
    out, q, k, v = run("performer", BenchConfig("performer", 64, d=16, heads=2, causal=causal))
    w = orthogonal_features(256, 16, seed=0, dtype=torch.float64)  # (m, d): the entry's documented draw
    half = 16**-0.25  # q·k/√d = (q·d^(−1/4))·(k·d^(−1/4))

    def phi(x: torch.Tensor) -> torch.Tensor:
        x = x * half
        return torch.exp(x @ w.T - (x * x).sum(-1, keepdim=True) / 2) / math.sqrt(256)  # (..., n, m)

    expected = weighted(phi(q) @ phi(k).transpose(-2, -1), v, causal)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)


def test_linformer_projects_keys_and_values_to_256_rows_and_has_no_causal_form() -> None:
    out, q, k, v = run("linformer", BenchConfig("linformer", 300, d=16, heads=2))
    e, f = (p.double() for p in linformer_projections(256, 300, seed=0))  # (256, n) each
    expected = torch.softmax(q @ (e @ k).transpose(-2, -1) / 4.0, dim=-1) @ (f @ v)  # scale 1/√16
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)
    small = BenchConfig("linformer", 64, d=16, heads=2)
    assert "rank 64" in IMPLEMENTATIONS["linformer"].backend(IMPLEMENTATIONS["linformer"].prepare(
        *make_inputs(small)), False)  # rank at most n  # fmt: skip
    row = run_config(BenchConfig("linformer", 64, d=16, heads=2, causal=True), min_run_time=0.0, cap_bytes=2**30)
    assert row.status == "n/a" and "no causal form" in row.note


@pytest.mark.parametrize("name", ROUTES)
def test_each_memory_model_counts_the_repeated_kv_heads(name: str) -> None:
    plain = IMPLEMENTATIONS[name].extra_bytes(BenchConfig(name, 2048, d=64, heads=8))
    grouped = IMPLEMENTATIONS[name].extra_bytes(BenchConfig(name, 2048, d=64, heads=8, kv_heads=2))
    assert grouped == plain + 2 * 8 * 2048 * 64 * 4  # K and V repeated for 8 heads, float32


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_masked_is_exact_softmax_over_its_window(causal: bool) -> None:
    out, q, k, v = run("sdpa-masked", BenchConfig("sdpa-masked", 300, d=16, heads=2, causal=causal))
    offset = torch.arange(300)[:, None] - torch.arange(300)[None, :]  # (n, n): query minus key position
    allowed = (offset.abs() <= 256) & ((offset >= 0) if causal else True)
    scores = (q @ k.transpose(-2, -1) / 4.0).masked_fill(~allowed, -math.inf)
    torch.testing.assert_close(out, torch.softmax(scores, dim=-1) @ v, atol=1e-5, rtol=1e-4)


def test_the_sweep_says_an_approximations_error_instead_of_judging_it() -> None:
    result = run_sweep(SweepSpec(("sdpa", "linear"), (128,), d=16, heads=2), min_run_time=0.0, cap_bytes=2**30)
    sdpa, linear = result.rows
    assert sdpa.status == linear.status == "ok"
    assert sdpa.max_error is not None and sdpa.max_error < 1e-5 and sdpa.note == ""
    assert linear.max_error is None and linear.gflops is None  # not a rounding error; not exact attention's FLOPs
    # The note's number, recomputed here: linear attention at n = 1024 on the sweep's seeded check inputs.
    q, k, v = make_inputs(BenchConfig("linear", 1024, d=16, heads=2), seed=1)
    out = IMPLEMENTATIONS["linear"].run((q, k, v), False).double()
    ref = reference_attention(q, k, v)
    expected = float((out - ref).norm() / ref.norm())
    assert linear.note == f"approximation: relative error {expected:.1%} vs the float64 reference at n = 1024"
    assert 0.3 < expected < 1.0  # a different function: far from softmax on these peaked inputs


def test_flex_window_is_not_available_where_torch_compile_cannot_run(monkeypatch) -> None:
    monkeypatch.setenv(NO_COMPILE_ENV, "1")
    row = run_config(BenchConfig("flex-window", 256, d=16, heads=2), min_run_time=0.0, cap_bytes=2**30)
    assert row.status == "n/a" and NO_COMPILE_ENV in row.note


@pytest.mark.slow
@pytest.mark.skipif(flex_available("cpu") is not None, reason="torch.compile cannot run here")
def test_flex_window_is_exact_softmax_over_a_window_of_256() -> None:
    out, q, k, v = run("flex-window", BenchConfig("flex-window", 640, d=16, heads=2))
    near = (torch.arange(640)[:, None] - torch.arange(640)[None, :]).abs() <= 256  # (n, n)
    scores = (q @ k.transpose(-2, -1) / 4.0).masked_fill(~near, -math.inf)
    torch.testing.assert_close(out, torch.softmax(scores, dim=-1) @ v, atol=1e-5, rtol=1e-4)
    backend = IMPLEMENTATIONS["flex-window"].backend
    prepared = IMPLEMENTATIONS["flex-window"].prepare(*make_inputs(BenchConfig("flex-window", 640, d=16, heads=2)))
    IMPLEMENTATIONS["flex-window"].run(prepared, False)
    assert "window 256" in backend(prepared, False) and "of the tiles skipped" in backend(prepared, False)


def test_the_cli_runs_the_routes_beside_sdpa_and_says_what_each_is(monkeypatch) -> None:
    monkeypatch.setenv(NO_COMPILE_ENV, "1")  # flex-window: n/a here, with the reason (no compile of seconds)
    out = io.StringIO()
    argv = ["--impl", "sdpa", "flex-window", "linear", "performer", "linformer", "--n", "256", "512", "--d", "16"]
    assert main([*argv, "--heads", "2", "--min-run-time", "0", "--quiet"], stream=out) == 0
    rows = {(line.split()[0], line.split()[1]): line for line in out.getvalue().splitlines()
            if line.split()[:1] and line.split()[0] in IMPLEMENTATIONS}  # fmt: skip
    assert len(rows) == 10
    for n in ("256", "512"):
        assert " ok " in rows["sdpa", n] + " " and "approximation" not in rows["sdpa", n]
        assert "n/a" in rows["flex-window", n] and NO_COMPILE_ENV in rows["flex-window", n]
        for name in ("linear", "performer", "linformer"):
            assert "ok (approximation: relative error" in rows[name, n], rows[name, n]
