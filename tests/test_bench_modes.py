"""The three modes: forward, backward on its own, forward + backward, for every implementation.

What is timed in each mode, the rows an implementation without a backward gets, the gradient
columns against float64 autograd, FLOPs per mode, and the training memory models against peaks
measured in fresh worker processes. No test asserts a speed (benchmarks/report.py does that).
"""

from __future__ import annotations

import csv
import io

import pytest
import torch
from bench_fixtures import _no_matmul_probe  # noqa: F401  (autouse: the sweeps here skip the matmul-rate probe)

from attention_core import bench
from attention_core.accuracy import attention_grads
from attention_core.bench import (
    CSV_COLUMNS,
    IMPLEMENTATIONS,
    MODES,
    NOT_AVAILABLE,
    BenchConfig,
    Impl,
    SweepSpec,
    flop_table,
    fresh_process_peak,
    gradient_check,
    leaves,
    make_inputs,
    run_config,
    run_sweep,
    timed_pass,
)
from attention_core.bench import measure as measure_mod
from attention_core.bench.cli import main
from attention_core.textbook import textbook_attention

TINY = dict(d=8, heads=2)
LINUX_PEAK = pytest.mark.skipif(not measure_mod.cpu_peak_supported(), reason="needs Linux /proc/self/clear_refs")


# ---- every implementation in every mode ---------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["textbook", "trace", "sdpa", "tiled"])
def test_each_mode_gives_an_ok_row_with_the_modes_flops(device, name, mode):
    config = BenchConfig(name, 64, **TINY, device=str(device), mode=mode)
    row = run_config(config, min_run_time=0.0, cap_bytes=2**30)
    assert row.status == "ok", row.note
    assert row.mode == mode and row.median_ms > 0 and row.samples >= 3
    assert row.gflops == pytest.approx(config.flops() / (row.median_ms / 1e3) / 1e9)
    assert row.predicted_bytes == IMPLEMENTATIONS[name].predicted_bytes(config) > 0


class _Counting:
    """textbook's run, counting its forward calls and the backward calls of its graph."""

    def __init__(self) -> None:
        self.forwards = self.backwards = 0

    def run(self, inputs, causal):
        self.forwards += 1
        out = IMPLEMENTATIONS["textbook"].run(inputs, causal)
        if out.requires_grad:
            out.register_hook(self._backward)
        return out

    def _backward(self, grad):
        self.backwards += 1


@pytest.mark.parametrize(("mode", "forwards_per_call"), [("fwd", 1), ("bwd", 0), ("fwd+bwd", 1)])
def test_the_backward_is_timed_on_its_own(mode, forwards_per_call):
    """bwd: the forward runs once, before the timed calls; each timed call is one backward."""
    counting = _Counting()
    config = BenchConfig("textbook", 32, **TINY, mode=mode)
    inputs = make_inputs(config)
    d_out = torch.randn(1, 2, 32, 8) if mode != "fwd" else None
    if mode != "fwd":
        inputs = leaves(inputs)
    step = timed_pass(counting.run, inputs, False, mode, d_out)
    before = counting.forwards
    for _ in range(4):
        result = step()
    assert counting.forwards - before == 4 * forwards_per_call
    assert counting.backwards == (0 if mode == "fwd" else 4)
    if mode != "fwd":  # dQ, dK, dV, equal to autograd's through the textbook code
        expected = attention_grads(textbook_attention, *inputs, d_out)
        for got, want in zip(result, expected, strict=True):
            torch.testing.assert_close(got, want)


def test_inputs_that_do_not_require_grad_still_benchmark_their_backward():
    q, k, v = make_inputs(BenchConfig("tiled", 32, **TINY))
    assert not (q.requires_grad or k.requires_grad or v.requires_grad)
    own = leaves((q, k, v))
    for x, y in zip(own, (q, k, v), strict=True):
        assert x.requires_grad and x.is_leaf and x.data_ptr() == y.data_ptr()
    assert not q.requires_grad  # the caller's tensors are left as they were
    with pytest.raises(ValueError, match="upstream gradient"):
        timed_pass(IMPLEMENTATIONS["tiled"].run, own, False, "bwd")
    with pytest.raises(ValueError, match="mode"):
        timed_pass(IMPLEMENTATIONS["tiled"].run, own, False, "backward")


def test_a_mode_an_implementation_cannot_run_says_why_in_a_sentence():
    for mode in ("bwd", "fwd+bwd"):
        row = run_config(BenchConfig("numpy", 32, **TINY, mode=mode), cap_bytes=2**30)
        assert (row.status, row.median_ms) == ("n/a", None)
        assert row.note == "no backward pass: numpy has no autograd, so there are no gradients to time"
    assert run_config(BenchConfig("numpy", 32, **TINY), min_run_time=0.0, cap_bytes=2**30).status == "ok"
    assert "forward only" in IMPLEMENTATIONS["tiled-triton"].no_backward
    no_backward = {name for name, impl in IMPLEMENTATIONS.items() if impl.no_backward}
    assert no_backward == {"numpy", "tiled-triton", "flex-window"}
    (planned,) = bench.plan(SweepSpec(("numpy",), (32,), device="cpu", mode="bwd"), cap_bytes=2**30)
    assert planned.refusal == row.note  # the page says so before anything runs


class _NoBackward(torch.autograd.Function):
    """A kernel with a forward and no backward, as a forced SDPA kernel can be on some devices."""

    @staticmethod
    def forward(ctx, q, k, v):
        return textbook_attention(q, k, v)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::_fake_attention is not implemented")


@pytest.mark.parametrize(("forced", "status"), [(True, "n/a"), (False, "error")])
def test_a_forced_kernel_without_a_backward_is_not_available_never_a_traceback(monkeypatch, forced, status):
    run = lambda inputs, causal: _NoBackward.apply(*inputs)  # noqa: E731
    fake = Impl("fake-kernel", "no backward", run, lambda c: 0, lambda i, c: "fake", forced=forced)
    monkeypatch.setitem(IMPLEMENTATIONS, "fake-kernel", fake)
    row = run_config(BenchConfig("fake-kernel", 32, **TINY, mode="bwd"), cap_bytes=2**30)
    assert row.status == status
    expected = "derivative for aten::_fake_attention is not implemented"
    assert row.note == (f"{NOT_AVAILABLE}: {expected}" if forced else expected)
    assert gradient_check(BenchConfig("fake-kernel", 32, **TINY)) is None  # no gradient column either


def test_an_entry_declares_no_backward_or_gets_a_guessed_model(monkeypatch):
    """How a registry entry joins: say why it has no backward, or run through autograd."""
    plain = Impl("plain", "autograd", IMPLEMENTATIONS["textbook"].run, lambda c: 1000, lambda i, c: "plain")
    monkeypatch.setitem(IMPLEMENTATIONS, "plain", plain)
    config = BenchConfig("plain", 32, **TINY, mode="fwd+bwd")
    assert plain.predicted_bytes(config) == 2 * 1000 + config.input_bytes()  # no training model: the guard's guess
    assert run_config(config, min_run_time=0.0, cap_bytes=2**30).status == "ok"
    forward_only = Impl(**{**plain.__dict__, "no_backward": "it has no backward kernel"})
    monkeypatch.setitem(IMPLEMENTATIONS, "plain", forward_only)
    assert run_config(config, cap_bytes=2**30).note == "no backward pass: it has no backward kernel"


# ---- gradient accuracy --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", ["textbook", "trace", "sdpa", "tiled", "sdpa-math"])
def test_every_backward_passes_flashattentions_rule(name, dtype):
    config = BenchConfig(name, 128, d=32, heads=2, dtype=dtype, causal=True)
    check = gradient_check(config)
    sdpa = gradient_check(BenchConfig("sdpa", 128, d=32, heads=2, dtype=dtype, causal=True))
    assert check.passes_beside(sdpa), check.describe()
    assert set(check.errors) == {"err_dq", "err_dk", "err_dv"} and all(e > 0 for e in check.errors.values())


def test_a_wrong_gradient_fails_the_rule(monkeypatch):
    """The check can fail: attention whose dV is off by one part in a thousand does."""

    class Skewed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            ctx.save_for_backward(q, k, v)
            return textbook_attention(q, k, v)

        @staticmethod
        def backward(ctx, grad):
            dq, dk, dv = attention_grads(textbook_attention, *ctx.saved_tensors, grad)
            return dq, dk, dv * 1.001

    run = lambda inputs, causal: Skewed.apply(*inputs)  # noqa: E731
    monkeypatch.setitem(IMPLEMENTATIONS, "skewed", Impl("skewed", "off", run, lambda c: 0, lambda i, c: "x"))
    check = gradient_check(BenchConfig("skewed", 128, d=32, heads=2))
    assert check.dq.passes and check.dk.passes and not check.dv.passes


def test_grouped_query_gradients_are_summed_over_each_group():
    check = gradient_check(BenchConfig("tiled", 64, d=16, heads=4, kv_heads=2))
    assert check.passes, check.describe()


# ---- FLOPs --------------------------------------------------------------------------------


def test_backward_flops_are_two_and_a_half_times_the_forwards():
    for causal in (False, True):
        fwd, bwd, both = (BenchConfig("textbook", 1024, d=64, heads=8, causal=causal, mode=m).flops() for m in MODES)
        assert fwd == (2 if causal else 4) * 8 * 1024 * 1024 * 64
        assert (bwd / fwd, both / fwd) == (2.5, 3.5)
    for mode in MODES:
        config = BenchConfig("textbook", 1024, d=64, heads=8, batch=2, causal=True, mode=mode)
        rows = flop_table(1024, 64, batch=2, heads=8, causal=True, mode=mode)
        matmuls = sum(r["flops"] for r in rows if r["formula"] == "2·B·H·n²·d")
        assert matmuls == config.flops()
        assert sum(r["share"] for r in rows) == pytest.approx(1.0)
        assert {r["pass"] for r in rows} == {"fwd": {"forward"}, "bwd": {"backward"}}.get(mode, {"forward", "backward"})


# ---- the table, the CSV and the CLI -------------------------------------------------------


def test_the_cli_takes_a_mode_and_the_csv_has_mode_and_gradient_columns(tmp_path):
    path, out = tmp_path / "out.csv", io.StringIO()
    argv = ["--impl", "textbook", "tiled", "numpy", "--n", "16", "--d", "8", "--heads", "2", "--mode", "bwd"]
    assert main([*argv, "--min-run-time", "0", "--quiet", "--csv", str(path)], stream=out) == 0
    with path.open(newline="") as fh:
        rows = {r["impl"]: r for r in csv.DictReader(fh)}
    assert {"mode", "err_dq", "err_dk", "err_dv"} <= set(CSV_COLUMNS)
    assert tuple(next(iter(rows.values()))) == CSV_COLUMNS
    assert {r["mode"] for r in rows.values()} == {"bwd"}
    assert rows["tiled"]["status"] == "ok" and 0 < float(rows["tiled"]["err_dv"]) < 1e-5
    assert rows["numpy"]["status"] == "n/a" and rows["numpy"]["err_dq"] == ""
    text = out.getvalue()
    assert "err dQ" in text and "bwd configurations" in text and "no backward pass: numpy" in text


def test_the_forward_mode_is_the_default_and_computes_no_gradients():
    result = run_sweep(SweepSpec(("tiled",), (16,), **TINY), min_run_time=0.0, cap_bytes=2**30)
    (row,) = result.rows
    assert row.mode == "fwd" and row.max_error is not None and row.err_dq is None


def test_a_bad_mode_is_refused(capsys):
    with pytest.raises(ValueError, match="mode"):
        BenchConfig("textbook", 16, mode="backward")
    with pytest.raises(SystemExit):
        main(["--mode", "train"])
    assert "invalid choice" in capsys.readouterr().err


# ---- training memory, measured in fresh worker processes ----------------------------------

# (impl, mode, dtype, causal, K/V heads of 8): what autograd keeps differs for each.
MEMORY_CASES = [
    ("textbook", "fwd+bwd", "float32", True, 8),
    ("textbook", "bwd", "float32", False, 8),
    ("trace", "fwd+bwd", "float32", False, 8),
    ("sdpa", "fwd+bwd", "float32", False, 8),
    ("sdpa-math", "fwd+bwd", "bfloat16", False, 8),
    ("tiled", "fwd+bwd", "float32", False, 2),  # GQA: its autograd node keeps the repeated K and V
    ("tiled", "bwd", "bfloat16", False, 8),
]


@LINUX_PEAK
@pytest.mark.parametrize(("name", "mode", "dtype", "causal", "kv_heads"), MEMORY_CASES)
def test_the_training_memory_models_hold_in_a_fresh_process(name, mode, dtype, causal, kv_heads):
    """The model against the peak of the mode's call, measured in a fresh worker.

    Margin: 10 fresh workers per case on a loaded 2-core machine gave measured ÷ predicted of
    0.970–1.003 (textbook 0.986–1.000, trace 0.999–1.001, sdpa 0.970–0.994, sdpa-math bfloat16
    0.992–1.001, tiled 0.986–1.003, tiled bwd bfloat16 0.986–0.999; tiled with 2 K/V heads, 8 workers,
    0.983–1.005; every entry with 2 K/V heads, both modes, n = 1024: 0.981–1.000). So ±8 %, as the
    forward models are held to, is over twice the largest deviation seen and still fails a model one
    n×n off (a third of textbook's) or one score tile off (a fifth of tiled's at n = 512).
    """
    config = BenchConfig(name, 512, d=64, heads=8, dtype=dtype, causal=causal, mode=mode, kv_heads=kv_heads)
    peak = fresh_process_peak(config)
    predicted = IMPLEMENTATIONS[name].predicted_bytes(config)
    assert abs(peak / predicted - 1) < 0.08, (peak, predicted)


def test_the_models_tell_the_training_story():
    """Textbook keeps n×n for its backward; SDPA's fused kernel and tiled keep O(n)."""
    for name, grows in (("textbook", 4.0), ("trace", 4.0), ("sdpa", 2.0), ("tiled", 2.0)):
        impl = IMPLEMENTATIONS[name]
        small, large = (impl.predicted_bytes(BenchConfig(name, n, mode="fwd+bwd")) for n in (4096, 8192))
        assert large / small == pytest.approx(grows, rel=0.1), name
    config = BenchConfig("textbook", 4096, mode="fwd+bwd")
    square = bench.score_matrix_bytes(4096, heads=8)
    assert 3 * square < IMPLEMENTATIONS["textbook"].predicted_bytes(config) < 3.1 * square  # W, dW and dS
    assert IMPLEMENTATIONS["tiled"].predicted_bytes(BenchConfig("tiled", 4096, mode="fwd+bwd")) * 20 < 3 * square
