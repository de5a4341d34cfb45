"""The benchmark issue's goals, measured side by side in one run on this machine.

    python benchmarks/report.py [--n 4096] [--repeats 3]

Prints, with the goal beside each number:

1. the default sweep's wall time, run first in this fresh process, as the CLI would (goal ≤ 20 s);
2. tiled / SDPA time per call at n = 4096, d = 64, 8 heads, float32, CPU (goal ≤ 1.6), as the
   median ratio of ``--repeats`` back-to-back pairs, so a burst of load hits both sides;
3. tiled / naive peak extra memory at the same shape (goal ≤ 1/50);
4. the naive path's measured peak against its analytic prediction (goal: within 20 %).

Timings need a quiet machine: the load average is printed before and after, and other
processes competing for the cores make the many small kernels of ``tiled`` (and ``naive``)
wait at every thread barrier far more than SDPA's single fused call. Rerun when it is high.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attention_core import bench


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def _time(name: str, config: bench.BenchConfig, min_run_time: float) -> float:
    impl = bench.get_impl(name)
    inputs = impl.prepare(*bench.make_inputs(config))

    def call() -> object:
        return impl.run(inputs, config.causal)

    call()  # warm-up
    return bench.time_call(call, config.device, min_run_time=min_run_time, min_samples=3).median


def _peak(name: str, config: bench.BenchConfig) -> int | None:
    impl = bench.get_impl(name)
    inputs = impl.prepare(*bench.make_inputs(config))
    impl.run(inputs, config.causal)  # warm-up, so lazy initialisation is not counted
    peak, _source = bench.measure_peak_extra(lambda: impl.run(inputs, config.causal), config.device)
    return peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3, help="tiled/SDPA pairs; the median ratio is reported")
    parser.add_argument("--min-run-time", type=float, default=1.0, help="seconds of timing per side per pair")
    args = parser.parse_args(argv)

    print(f"torch {torch.__version__} · {torch.get_num_threads()} threads · {bench.environment('cpu')['device name']}")
    print(f"load average before: {_load()}")

    # 1. The default sweep, first, in a fresh process, without a budget: how long it really takes.
    start = time.perf_counter()
    sweep = bench.run_sweep(bench.DEFAULT_SWEEP, budget_s=None)
    sweep_s = time.perf_counter() - start
    done = sum(r.status == "ok" for r in sweep.rows)

    # 2. tiled / SDPA at n, back to back.
    config = bench.BenchConfig("tiled", args.n, d=64, heads=8, batch=1, dtype="float32", device="cpu")
    ratios, sdpa_s, tiled_s = [], [], []
    for _ in range(args.repeats):
        s = _time("sdpa", config, args.min_run_time)
        t = _time("tiled", config, args.min_run_time)
        sdpa_s.append(s)
        tiled_s.append(t)
        ratios.append(t / s)
    ratio = statistics.median(ratios)

    # The same pair on one thread: no thread barriers, so far less sensitive to other processes.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one_thread = statistics.median(
            _time("tiled", config, args.min_run_time) / _time("sdpa", config, args.min_run_time)
            for _ in range(args.repeats)
        )
    finally:
        torch.set_num_threads(threads)

    # 3-4. Peak extra memory of tiled and naive at n, and naive against its prediction.
    tiled_peak = _peak("tiled", config)
    naive_peak = _peak("naive", config)
    predicted = bench.naive_extra_bytes(config)

    print(f"load average after:  {_load()}\n")
    rows = [
        (
            f"default sweep wall time ({done}/{len(sweep.rows)} configurations ok)",
            f"{sweep_s:.1f} s",
            "≤ 20 s",
            sweep_s <= 20,
        ),
        (
            f"tiled / SDPA time, n = {args.n}, d = 64, 8 heads, fp32 "
            f"(tiled {statistics.median(tiled_s) * 1e3:.0f} ms, SDPA {statistics.median(sdpa_s) * 1e3:.0f} ms; "
            f"pairs {', '.join(f'{r:.2f}' for r in ratios)})",
            f"{ratio:.2f}",
            "≤ 1.6",
            ratio <= 1.6,
        ),
        ("  the same on 1 thread (for reference: insensitive to thread barriers)", f"{one_thread:.2f}", "–", True),
    ]
    if tiled_peak is not None and naive_peak:
        rows.append(
            (
                f"tiled / naive peak extra memory, n = {args.n} "
                f"(tiled {bench.format_bytes(tiled_peak)}, naive {bench.format_bytes(naive_peak)})",
                f"1/{naive_peak / max(tiled_peak, 1):.0f}",
                "≤ 1/50",
                tiled_peak * 50 <= naive_peak,
            )
        )
        rows.append(
            (
                f"naive measured peak / predicted ({bench.format_bytes(predicted)} predicted)",
                f"{naive_peak / predicted:.3f}",
                "within 20 %",
                abs(naive_peak / predicted - 1) <= 0.2,
            )
        )
    else:
        rows.append(("peak memory", "not measured on this platform", "–", False))

    width = max(len(r[0]) for r in rows)
    for what, value, goal, ok in rows:
        verdict = "" if goal == "–" else ("met" if ok else "NOT MET")
        print(f"{what.ljust(width)}  {value:>8}  goal {goal:<12} {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
