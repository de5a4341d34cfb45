"""Issue 20's goals for the efficient-attention routes, measured side by side in one run on this machine.

    python benchmarks/efficient_report.py [--n 4096] [--window 256] [--ns 256 512 … 8192] [--budget 240]

fp32, batch 1, 8 heads, d = 64, CPU. Prints, with the goal beside each number:

1. FlexAttention, sliding window, at ``--n``: the block mask's build time (ours, from the tile
   summary, and torch's ``create_block_mask`` beside it), the first compiled call in this process,
   then the median time per call against dense SDPA, with the window as a dense mask and with
   no mask, timed in alternating rounds (goal: ≥ 3× faster), and the largest difference from
   the dense masked path (goal ≤ 1e-5);
2. linear attention's parallel and recurrent causal forms: the largest difference (goal ≤ 1e-5);
3. the Performer's error against exact attention at 16 and 256 features, mean over 5 seeds
   (goal: ≥ 3× smaller at 256), where each scaled |q|² ≈ 1, and at std 1 (peaked attention);
4. every route against SDPA over ``--ns`` under a time budget, timed in alternating rounds: median
   ms, measured peak memory beside the model's prediction, the crossover n and the log-log slope;
5. the published Long Range Arena figures beside the speed-ups measured here at 4K.

The compile time depends on inductor's on-disk cache (a first compile on a fresh machine is
slower than one that finds earlier work); the number printed is this process's first call.
Timings need a quiet machine: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attention_core import bench
from attention_core import efficient as eff
from attention_core.bench.sweep import DISTURBED_LOAD_PER_CORE

HEADS, D = 8, 64


def _load() -> str:
    per_core = bench.cpu_load_per_core()
    return "unknown" if per_core is None else f"{per_core:.2f} per core (1 min) on {os.cpu_count()} cores"


def _rounds(calls: dict[str, Callable[[], object]], repeats: int, min_run_time: float) -> dict[str, list[float]]:
    """Seconds per call of every function, one median per round, the order alternating by round."""
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(repeats):
        for name in names if r % 2 == 0 else reversed(names):
            seconds[name].append(bench.time_call(calls[name], "cpu", min_run_time=min_run_time, min_samples=1).median)
    return seconds


def _ratio(seconds: dict[str, list[float]], top: str, bottom: str) -> float:
    return statistics.median(a / b for a, b in zip(seconds[top], seconds[bottom], strict=True))


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def flex_goal(n: int, window: int, repeats: int) -> list[tuple[str, str, str, bool | None]]:
    from torch.nn.attention.flex_attention import create_block_mask

    rows: list[tuple[str, str, str, bool | None]] = []
    reason = eff.flex_available("cpu")
    if reason is not None:
        return [(f"flex sliding window, n = {n}", f"not run: {reason}", "≥ 3× faster than SDPA", False)]
    pattern = eff.sliding_window(window)
    q, k, v = eff.random_qkv(n, D, heads=HEADS, seed=0)
    plan = eff.flex_plan(q, k, v, pattern)
    started = time.perf_counter()
    create_block_mask(pattern, None, None, n, n, device="cpu")
    theirs_s = time.perf_counter() - started
    rows.append((f"block mask build, n = {n}, window {window} (ours, from the tile summary)",
                 f"{plan.mask.build_s * 1e3:.0f} ms", "–", None))  # fmt: skip
    rows.append(("  torch's create_block_mask for the same pattern", f"{theirs_s * 1e3:.0f} ms", "–", None))
    rows.append((f"first compiled call in this process ({'compiled here' if plan.compiled_now else 'cached'})",
                 f"{plan.compile_s:.1f} s", "–", None))  # fmt: skip
    rows.append(("tiles skipped", f"{plan.sparsity:.1%}", "–", None))
    mask = eff.dense_mask(pattern, n, n)
    calls = {
        "flex": lambda: plan.run(q, k, v),
        "sdpa, dense mask": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        "sdpa, no mask": lambda: F.scaled_dot_product_attention(q, k, v),
    }
    for call in calls.values():
        call()
    seconds = _rounds(calls, repeats, min_run_time=0.5)
    ms = {name: statistics.median(s) * 1e3 for name, s in seconds.items()}
    for base in ("sdpa, dense mask", "sdpa, no mask"):
        ratio = _ratio(seconds, base, "flex")
        rows.append((f"flex vs {base}: {ms['flex']:.0f} ms vs {ms[base]:.0f} ms (median of {repeats} rounds)",
                     f"{ratio:.2f}× faster", "≥ 3×", ratio >= 3.0))  # fmt: skip
    flex_out = plan.run(q, k, v)
    dense_out = eff.masked_attention(q, k, v, pattern, backend="dense").output
    diff = float((flex_out - dense_out).abs().max())
    rows.append(("flex vs the dense masked path (our core), max |Δ|", f"{diff:.1e}", "≤ 1e-5", diff <= 1e-5))
    diff_sdpa = float((flex_out - calls["sdpa, dense mask"]()).abs().max())
    rows.append(("  flex vs SDPA with the dense mask, max |Δ|", f"{diff_sdpa:.1e}", "–", None))
    return rows


def linear_goal(n: int) -> tuple[str, str, str, bool]:
    q, k, v = eff.random_qkv(n, D, heads=HEADS, seed=1)
    parallel = eff.linear_attention(q, k, v, is_causal=True)
    recurrent = eff.linear_attention_recurrent(q, k, v)
    diff = float((parallel - recurrent).abs().max())
    return (f"linear causal, parallel vs recurrent, n = {n}, max |Δ|", f"{diff:.1e}", "≤ 1e-5", diff <= 1e-5)


def performer_goal() -> list[tuple[str, str, str, bool | None]]:
    rows: list[tuple[str, str, str, bool | None]] = []
    for std, what in ((None, "scaled |q|² ≈ 1"), (1.0, "std 1, peaked")):
        curve = eff.error_curve("performer", [16, 64, 256], n=256, d=D, heads=HEADS, seeds=(0, 1, 2, 3, 4), std=std)
        ratio = curve.ratio(16, 256)
        errors = ", ".join(f"{m}: {e:.3f}" for m, e in zip(curve.x, curve.mean, strict=True))
        goal = std is None
        rows.append((f"Performer error ({what}; {errors}; slope {curve.slope():.2f})", f"{ratio:.2f}× smaller",
                     "≥ 3×" if goal else "–", ratio >= 3.0 if goal else None))  # fmt: skip
    return rows


def sweep(ns: list[int], window: int, budget_s: float, rounds: int) -> list[bench.BenchResult]:
    """Every route at each n, prepared once, then timed in ``rounds`` alternating rounds (the median is
    kept, so a burst of load from elsewhere hits every route alike); peak memory from one call each."""
    params = bench.RouteParams(window=window)
    names = ["sdpa", *(params.label(route) for route in bench.ROUTES)]
    deadline = time.perf_counter() + budget_s
    rows: list[bench.BenchResult] = []
    for n in ns:
        configs = {name: bench.BenchConfig(name, n, d=D, heads=HEADS) for name in names}
        calls: dict[str, Callable[[], object]] = {}
        backends: dict[str, str] = {}
        for name, config in configs.items():
            impl = bench.get_impl(name)
            predicted = impl.predicted_bytes(config)
            why = "the time budget ran out" if time.perf_counter() > deadline else impl.cannot_run(config)
            if why:
                rows.append(_row(config, predicted, "skipped" if why.startswith("the time") else "n/a", note=why))
                continue
            inputs = impl.prepare(*bench.make_inputs(config))
            calls[name] = lambda impl=impl, inputs=inputs: impl.run(inputs, False)
            calls[name]()  # warm-up (FlexAttention: its block mask, and the compile the first time)
            backends[name] = impl.backend(inputs, False)
        peaks = {name: bench.measure_peak_extra(call, "cpu")[0] for name, call in calls.items()}
        seconds = _rounds(calls, rounds, min_run_time=0.1)
        for name in calls:
            config = configs[name]
            ms = statistics.median(seconds[name]) * 1e3
            row = _row(config, bench.get_impl(name).predicted_bytes(config), "ok", backend=backends[name],
                       median_ms=ms, samples=rounds, peak_bytes=peaks[name])  # fmt: skip
            rows.append(row)
            print(f"  {name:<18} n = {n:>5}: {row.median_ms:>9.1f} ms  peak {bench.format_bytes(row.peak_bytes):>10}  "
                  f"model {bench.format_bytes(row.predicted_bytes):>10}", flush=True)  # fmt: skip
    return rows


def _row(config: bench.BenchConfig, predicted: int, status: str, **values: object) -> bench.BenchResult:
    return bench.BenchResult(**asdict(config), predicted_bytes=predicted, status=status, **values)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="n of the FlexAttention goal")
    parser.add_argument("--window", type=int, default=256, help="the sliding window")
    parser.add_argument("--ns", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096, 8192])
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the flex-vs-SDPA timing")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds for the sweep over n")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per n in the sweep")
    args = parser.parse_args(argv)

    print(f"torch {torch.__version__} · {torch.get_num_threads()} threads · "
          f"{bench.environment('cpu')['device name']} · fp32, batch 1, {HEADS} heads, d = {D}")  # fmt: skip
    print(f"load average before: {_load()}")
    load_before = bench.cpu_load_per_core()
    rows = flex_goal(args.n, args.window, args.repeats)
    rows.append(linear_goal(1024))
    rows += performer_goal()
    print(
        "\nsweep: every route and SDPA (full attention, no mask) over n; median ms per call of the rounds, "
        "peak memory of one call beside the model"
    )
    rows_by_n = sweep(sorted(set(args.ns)), args.window, args.budget, args.rounds)
    print(f"load average after:  {_load()}\n")
    busy = max(load_before or 0.0, bench.cpu_load_per_core() or 0.0)
    if busy > DISTURBED_LOAD_PER_CORE:
        print(f"warning: the load reached {busy:.1f} per core: other processes competed for the CPU; "
              "every timing below is disturbed. Rerun on a quiet machine.\n")  # fmt: skip

    width = max(len(r[0]) for r in rows)
    for what, value, goal, ok in rows:
        mark = "" if ok is None else _verdict(ok)
        print(f"{what:<{width}}  {value:>14}  {goal:>22}  {mark}")

    print("\nroute vs SDPA over n (ms per call; crossover: the n from which the route stays faster)")
    ns_done = sorted({r.n for r in rows_by_n if r.status == "ok"})
    fits = bench.scaling_fits(rows_by_n)
    times = {impl: {r.n: r.median_ms for r in rows_by_n if r.impl == impl and r.status == "ok"}
             for impl in dict.fromkeys(r.impl for r in rows_by_n)}  # fmt: skip
    print(f"{'route':<18}" + "".join(f"{n:>10}" for n in ns_done) + f"{'crossover':>11}{'slope':>8}")
    for impl, by_n in times.items():
        cells = "".join(f"{by_n[n]:>10.1f}" if n in by_n else f"{'–':>10}" for n in ns_done)
        cross = "–" if impl == "sdpa" else str(bench.crossover_n(rows_by_n, impl) or "none")
        slope = fits[impl].time_slope if impl in fits else None
        print(f"{impl:<18}{cells}{cross:>11}{'–' if slope is None else f'{slope:.2f}':>8}")

    print(f"\nLong Range Arena (published: {eff.SOURCE})")
    print(f"{'model':<16}{'LRA avg':>8}{'speed 4K':>10}{'mem 4K':>9}   measured here at 4K (one attention call, CPU)")
    base = times["sdpa"].get(4096)
    labels = {bench.parse_route(impl)[0]: impl for impl in times if bench.parse_route(impl)}
    for model, route in eff.ROUTE_OF_MODEL.items():
        row = eff.lra_result(model)
        speed = "–" if row.speedup_4k is None else f"{row.speedup_4k:.1f}×"
        mem = "–" if row.memory_gb_4k is None else f"{row.memory_gb_4k:.2f} GB"
        here = times.get(labels.get(route, route), {}).get(4096)
        measured = f"{route}: {base / here:.1f}× SDPA's speed" if here and base else f"{route}: –"
        print(f"{model:<16}{row.average:>8.2f}{speed:>10}{mem:>9}   {measured}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
