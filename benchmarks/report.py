"""The benchmark's goals and baselines, measured side by side in one run on this machine.

    python benchmarks/report.py [--ns 1024 2048 4096] [--repeats 5] [--no-sweep] [--no-training]

Prints, with the goal beside each number:

1. the default sweep's wall time, run first in this fresh process, as the CLI would (goal ≤ 20 s),
   and the same sweep in ``fwd+bwd`` mode after it (goal ≤ 20 s, the page's default budget);
2. a table of ``textbook ÷ sdpa``, ``trace ÷ sdpa`` and ``tiled ÷ sdpa`` time per call at each n
   (d = 64, 8 heads, float32, CPU). ``textbook`` is the code tutorials write, ``trace`` the traced
   walkthrough path. Each round times every implementation once, in an order that alternates
   between rounds, and divides by SDPA's time of the same round; the median over ``--repeats``
   rounds is printed, so a burst of load hits every side alike. Goal: tiled ÷ sdpa ≤ 1.6 at the
   largest n;
3. the one-call API ``attention_core.dot_product_attention`` against the textbook code
   at the largest n, timed the same way (goal ≤ 1.3);
4. tiled ÷ trace peak extra memory at the largest n (goal ≤ 1/50, set when "naive" named the
   traced path), and tiled ÷ textbook beside it;
5. each materialising path's peak memory against its model, measured in a fresh worker process
   at n = 1024, where history cannot move it (goal: within 20 %);
6. training (issue 19): ``textbook ÷ sdpa`` and ``tiled ÷ sdpa`` time of forward + backward at each n,
   timed as above (the backward through autograd on fresh leaves, a random dO), goal tiled ÷ sdpa
   ≤ 2.0 at the largest n; ``tiled ÷ textbook`` peak memory of forward + backward, each measured in a
   fresh worker process (goal ≤ 1/20 at the largest n), with measured ÷ model beside it;
7. dQ, dK and dV of every implementation with a backward, in float32 and bfloat16, causal or not, at
   n = 128 against float64 autograd, by FlashAttention's rule (in float32, its exception for nearly
   one-hot rows: 2× the larger of standard attention's and torch SDPA's error).

Timings need a quiet machine: the load average is printed before and after, and other
processes competing for the cores make the many small kernels of ``tiled`` and ``trace``
wait at every thread barrier far more than SDPA's single fused call. Rerun when it is high.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attention_core as ac
from attention_core import bench
from attention_core.bench.sweep import DISTURBED_LOAD_PER_CORE

BASELINES = ("textbook", "trace", "tiled")  # each divided by sdpa
TRAINING = ("textbook", "tiled")  # forward + backward, each divided by sdpa's
GRAD_DTYPES = ("float32", "bfloat16")  # the CPU's; float16 is checked on CUDA
LEAN = "lean API"  # ac.dot_product_attention, timed beside the others
MEMORY_N = 1024


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def _calls(n: int) -> dict[str, Callable[[], object]]:
    """Every function timed at ``n``, on one set of inputs, each warmed up once."""
    config = bench.BenchConfig("sdpa", n, d=64, heads=8, batch=1, dtype="float32", device="cpu")
    q, k, v = bench.make_inputs(config)
    def registry_call(name: str) -> Callable[[], object]:
        impl = bench.get_impl(name)
        return lambda: impl.run((q, k, v), False)

    calls = {name: registry_call(name) for name in ("sdpa", *BASELINES)}
    calls[LEAN] = lambda: ac.dot_product_attention(q, k, v)
    for call in calls.values():
        call()
    return calls


def _rounds(calls: dict[str, Callable[[], object]], repeats: int, min_run_time: float) -> dict[str, list[float]]:
    """Seconds per call of every function, one sample per round, the order alternating by round."""
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(repeats):
        for name in names if r % 2 == 0 else reversed(names):
            timing = bench.time_call(calls[name], "cpu", min_run_time=min_run_time, min_samples=1)
            seconds[name].append(timing.median)
    return seconds


def _ratio(seconds: dict[str, list[float]], top: str, bottom: str) -> float:
    """Median over rounds of top ÷ bottom, each round's pair taken together."""
    return statistics.median(a / b for a, b in zip(seconds[top], seconds[bottom], strict=True))


def _peak(name: str, n: int) -> int | None:
    config = bench.BenchConfig(name, n, d=64, heads=8, batch=1, dtype="float32", device="cpu")
    impl = bench.get_impl(name)
    inputs = impl.prepare(*bench.make_inputs(config))
    impl.run(inputs, False)  # warm-up, so lazy initialisation is not counted
    peak, _source = bench.measure_peak_extra(lambda: impl.run(inputs, False), "cpu")
    return peak


def _training_calls(n: int) -> dict[str, Callable[[], object]]:
    """Forward + backward of sdpa and the training baselines at ``n``, on one set of leaves, each warmed up once."""
    config = bench.BenchConfig("sdpa", n, d=64, heads=8, batch=1, dtype="float32", device="cpu", mode="fwd+bwd")
    inputs, d_out = bench.leaves(bench.make_inputs(config)), bench.grad_out(config)
    calls = {name: bench.timed_pass(bench.get_impl(name).run, inputs, False, "fwd+bwd", d_out) for name in
             ("sdpa", *TRAINING)}  # fmt: skip
    for call in calls.values():
        call()
    return calls


def _training(ns: list[int], repeats: int, min_run_time: float) -> tuple[list[str], list[tuple[str, str, str, bool]]]:
    """Forward + backward time ratios and peak-memory ratios at each n: the table's lines and the goals' rows."""
    table, rows = [], []
    for n in ns:
        seconds = _rounds(_training_calls(n), repeats, min_run_time)
        ms = {name: statistics.median(s) * 1e3 for name, s in seconds.items()}
        ratios = {name: _ratio(seconds, name, "sdpa") for name in TRAINING}
        peaks, models = {}, {}
        for name in TRAINING:
            config = bench.BenchConfig(name, n, d=64, heads=8, dtype="float32", device="cpu", mode="fwd+bwd")
            peaks[name], models[name] = bench.fresh_process_peak(config), bench.get_impl(name).predicted_bytes(config)
        memory = peaks["textbook"] / max(peaks["tiled"], 1) if None not in peaks.values() else None
        fits = "  ".join(f"{peaks[name] / models[name]:>11.3f}" if peaks[name] else f"{'–':>11}" for name in TRAINING)
        table.append(
            f"{n:>6}  {ms['sdpa']:>9.0f}  "
            + "  ".join(f"{ms[name]:>9.0f}  {ratios[name]:>7.2f}" for name in TRAINING)
            + f"  {bench.format_bytes(peaks['textbook']):>10}  {bench.format_bytes(peaks['tiled']):>10}  "
            + (f"{'1/' + format(memory, '.0f'):>11}" if memory else f"{'–':>11}")
            + f"  {fits}"
        )
        if n == ns[-1]:
            rounds = ", ".join(f"{a / b:.2f}" for a, b in zip(seconds["tiled"], seconds["sdpa"], strict=True))
            rows.append((f"tiled ÷ sdpa forward + backward time, n = {n} (rounds {rounds})",
                         f"{ratios['tiled']:.2f}", "≤ 2.0", ratios["tiled"] <= 2.0))  # fmt: skip
            if memory is not None:
                rows.append((f"tiled ÷ textbook forward + backward peak memory, n = {n} (fresh processes)",
                             f"1/{memory:.0f}", "≤ 1/20", memory >= 20))  # fmt: skip
    return table, rows


def _gradients() -> list[tuple[str, str, str, bool]]:
    """FlashAttention's rule on dQ, dK, dV for every implementation with a backward, dtype and mask."""
    rows = []
    names = [name for name, impl in bench.IMPLEMENTATIONS.items() if not impl.no_backward]
    for dtype in GRAD_DTYPES:
        for causal in (False, True):
            shape = dict(d=64, heads=8, dtype=dtype, causal=causal, device="cpu")
            sdpa = bench.gradient_check(bench.BenchConfig("sdpa", bench.CHECK_N, **shape))
            for name in names:
                check = bench.gradient_check(bench.BenchConfig(name, bench.CHECK_N, **shape))
                if check is None:  # cannot run here (a CUDA-only kernel): nothing to judge
                    continue
                worst = max(check, key=lambda c: c.ratio)
                what = f"{name} gradients, {dtype}, {'causal' if causal else 'no mask'} (worst {worst.ratio:.2f}×)"
                errors = " ".join(f"{e:.1e}" for e in check.errors.values())
                rows.append((f"  {what}: dQ dK dV {errors}", "pass" if check.passes else "fp32 rule",
                             "2× rule", check.passes_beside(sdpa)))  # fmt: skip
    every = all(ok for *_, ok in rows)
    return [("gradients within FlashAttention's rule, every implementation and dtype", "all" if every else "NOT all",
             "all", every), *rows]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[1024, 2048, 4096], help="sequence lengths")
    parser.add_argument("--repeats", type=int, default=5, help="rounds per n; the median ratio is reported")
    parser.add_argument("--min-run-time", type=float, default=0.2, help="seconds of timing per sample")
    parser.add_argument("--no-sweep", action="store_true", help="leave out the default sweeps' wall times")
    parser.add_argument("--no-training", action="store_true", help="leave out forward + backward and the gradients")
    args = parser.parse_args(argv)
    ns = sorted(set(args.ns))
    largest = ns[-1]

    print(f"torch {torch.__version__} · {torch.get_num_threads()} threads · {bench.environment('cpu')['device name']}")
    print(f"load average before: {_load()}")
    load_before = bench.cpu_load_per_core()
    rows: list[tuple[str, str, str, bool]] = []

    # 1. The default sweep, first, in a fresh process, without a budget: how long it really takes.
    if not args.no_sweep:
        start = time.perf_counter()
        sweep = bench.run_sweep(bench.DEFAULT_SWEEP, budget_s=None)
        sweep_s = time.perf_counter() - start
        done = sum(r.status == "ok" for r in sweep.rows)
        impls = ", ".join(bench.DEFAULT_SWEEP.impls)
        what = f"default sweep wall time ({done}/{len(sweep.rows)} configurations ok: {impls})"
        rows.append((what, f"{sweep_s:.1f} s", "≤ 20 s", sweep_s <= 20))
        start = time.perf_counter()
        sweep = bench.run_sweep(replace(bench.DEFAULT_SWEEP, mode="fwd+bwd"), budget_s=None)
        sweep_s = time.perf_counter() - start
        done = sum(r.status == "ok" for r in sweep.rows)
        what = f"the same sweep in fwd+bwd mode ({done}/{len(sweep.rows)} configurations ok)"
        rows.append((what, f"{sweep_s:.1f} s", "≤ 20 s", sweep_s <= 20))

    # 2-3. Every baseline ÷ SDPA at each n, and the lean API ÷ the textbook code, in the same rounds.
    table: list[str] = []
    at_largest: dict[str, list[float]] = {}
    for n in ns:
        seconds = _rounds(_calls(n), args.repeats, args.min_run_time)
        ms = {name: statistics.median(s) * 1e3 for name, s in seconds.items()}
        ratios = [_ratio(seconds, name, "sdpa") for name in BASELINES]
        table.append(
            f"{n:>6}  {ms['sdpa']:>9.0f}  "
            + "  ".join(f"{ms[name]:>12.0f}  {r:>7.2f}" for name, r in zip(BASELINES, ratios, strict=True))
            + f"  {_ratio(seconds, LEAN, 'textbook'):>12.2f}"
        )
        if n == largest:
            at_largest = seconds
    tiled_ratio = _ratio(at_largest, "tiled", "sdpa")
    lean_ratio = _ratio(at_largest, LEAN, "textbook")
    rows.append((f"tiled ÷ sdpa time, n = {largest}", f"{tiled_ratio:.2f}", "≤ 1.6", tiled_ratio <= 1.6))
    rows.append(
        (
            f"lean API ÷ textbook time, n = {largest} (lean {statistics.median(at_largest[LEAN]) * 1e3:.0f} ms, "
            f"textbook {statistics.median(at_largest['textbook']) * 1e3:.0f} ms; rounds "
            f"{', '.join(f'{a / b:.2f}' for a, b in zip(at_largest[LEAN], at_largest['textbook'], strict=True))})",
            f"{lean_ratio:.2f}",
            "≤ 1.3",
            lean_ratio <= 1.3,
        )
    )

    # 4. Peak extra memory of tiled at the largest n, in this process, against both materialising paths.
    # The goal was set when "naive" named the traced path, so it is checked against trace;
    # the ratio to the textbook code (two n×n matrices, not six) is printed beside it.
    tiled_peak, textbook_peak, trace_peak = (_peak(name, largest) for name in ("tiled", "textbook", "trace"))
    if tiled_peak is not None and textbook_peak and trace_peak:
        rows.append(
            (
                f"tiled ÷ trace peak extra memory, n = {largest} "
                f"(tiled {bench.format_bytes(tiled_peak)}, trace {bench.format_bytes(trace_peak)})",
                f"1/{trace_peak / max(tiled_peak, 1):.0f}",
                "≤ 1/50",
                tiled_peak * 50 <= trace_peak,
            )
        )
        rows.append(
            (
                f"  tiled ÷ textbook peak extra memory (textbook {bench.format_bytes(textbook_peak)})",
                f"1/{textbook_peak / max(tiled_peak, 1):.0f}",
                "–",
                True,
            )
        )

    # 5. The memory models, against peaks measured in fresh worker processes.
    for name in ("textbook", "trace", "numpy"):
        config = bench.BenchConfig(name, MEMORY_N, d=64, heads=8, batch=1, dtype="float32", device="cpu")
        peak = bench.fresh_process_peak(config)
        predicted = bench.get_impl(name).extra_bytes(config)
        if peak is None:
            rows.append((f"{name} peak memory", "not measured on this platform", "–", True))
            continue
        rows.append(
            (
                f"{name} measured peak ÷ model, n = {MEMORY_N}, fresh process "
                f"({bench.format_bytes(predicted)} predicted)",
                f"{peak / predicted:.3f}",
                "within 20 %",
                abs(peak / predicted - 1) <= 0.2,
            )
        )

    # 6-7. Training: forward + backward side by side, its memory in fresh processes, and the gradients.
    training: list[str] = []
    if not args.no_training:
        training, goals = _training(ns, args.repeats, args.min_run_time)
        rows += goals + _gradients()

    print(f"load average after:  {_load()}\n")
    busy = max(load_before or 0.0, bench.cpu_load_per_core() or 0.0)
    if busy > DISTURBED_LOAD_PER_CORE:
        print(
            f"warning: the load reached {busy:.1f} per core: other processes competed for the CPU, so the "
            "timings below are disturbed (most of all trace and tiled). Rerun on a quiet machine.\n"
        )
    print(f"time per call, d = 64, 8 heads, float32, CPU: median of {args.repeats} rounds, ratios taken per round")
    head = f"{'n':>6}  {'sdpa ms':>9}  " + "  ".join(f"{name + ' ms':>12}  {'÷ sdpa':>7}" for name in BASELINES)
    print(head + f"  {'lean ÷ textbook':>12}")
    print("\n".join(table) + "\n")
    if training:
        print(f"forward + backward, d = 64, 8 heads, float32, CPU: time per call, median of {args.repeats} rounds "
              "(ratios taken per round); peak memory beyond the inputs and dO, each in a fresh process")
        print(f"{'n':>6}  {'sdpa ms':>9}  " + "  ".join(f"{name + ' ms':>9}  {'÷ sdpa':>7}" for name in TRAINING)
              + f"  {'textbook peak':>10}  {'tiled peak':>10}  {'tiled÷textbook':>11}  {'textbook/model':>11}  "
              f"{'tiled/model':>11}")  # fmt: skip
        print("\n".join(training) + "\n")
    width = max(len(r[0]) for r in rows)
    for what, value, goal, ok in rows:
        verdict = "" if goal == "–" else ("met" if ok else "NOT MET")
        print(f"{what.ljust(width)}  {value:>8}  goal {goal:<12} {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
