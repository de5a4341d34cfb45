"""Every attention implementation side by side on one CUDA GPU, in one run.

    python benchmarks/gpu_report.py                 # n = 1024 … 32768 in float16, n = 4096 in float32
    python benchmarks/gpu_report.py --csv gpu.csv   # also every row as CSV
    python benchmarks/gpu_report.py --device cpu --n 256 512 --fp32-n 256 --heads 2   # a dry run on the CPU

For textbook (the code tutorials write), trace (the traced path), sdpa (torch's choice), every forced SDPA
backend (math, flash, efficient, cuDNN),
tiled, and any other entry of the registry, it prints:

- the median time per call (CUDA events after a warm-up) and its ratio to ``sdpa`` at the same
  n and dtype (above 1: slower than torch's own choice);
- the peak memory beyond the inputs (the CUDA allocator's peak), the model's prediction, and
  measured ÷ predicted (the goal: within 20 %);
- the largest error against a float64 reference on up to ``--check-rows`` queries spread over
  the sequence (all keys), and FlashAttention's verdict: at most 2× the error of standard torch
  attention in the same dtype on the same device.

A forced backend that has no kernel for the inputs shows as "not available for these inputs:
<torch's reason>"; a configuration over the memory cap shows as skipped, before anything is
allocated. Shape: batch 1, 16 heads, d = 64, no mask, unless told otherwise.

Exit status: 0 when the report ran (whatever it found); 2 when no CUDA device is visible (it
says so in one sentence and measures nothing) or an argument is invalid. ``--device cpu`` runs
the same logic on the CPU, for testing the script on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import csv
import gc
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attention_core import AccuracyCheck, bench, flash_rule

FP16_NS = (1024, 2048, 4096, 8192, 16384, 32768)
FP32_NS = (4096,)
NO_GPU = (
    "This report needs a CUDA GPU, and torch sees none here (torch {torch}, CUDA build: {cuda}). "
    "Run it on a GPU machine, or pass --device cpu for a dry run of its logic on the CPU."
)


@dataclass(frozen=True)
class ReportRow:
    """One line of the report (and of its CSV)."""

    impl: str
    dtype: str
    n: int
    status: str
    note: str
    backend: str
    median_ms: float | None
    vs_sdpa: float | None
    peak_bytes: int | None
    predicted_bytes: int
    error: float | None
    baseline_error: float | None
    verdict: str


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for a dry run (default: cuda)")
    p.add_argument("--n", nargs="+", type=int, default=list(FP16_NS), help="lengths measured in float16")
    p.add_argument("--fp32-n", nargs="*", type=int, default=list(FP32_NS), help="lengths measured in float32")
    p.add_argument("--impl", nargs="+", default=list(bench.EXACT), metavar="NAME", help="registry entries")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--min-run-time", type=float, default=0.5, help="seconds of timing per configuration")
    p.add_argument("--check-rows", type=int, default=1024, help="queries checked against float64 per configuration")
    p.add_argument("--cap-gb", type=float, default=None, help="memory cap per configuration (default: 80%% free)")
    p.add_argument("--csv", metavar="PATH", help="also write the rows as CSV")
    return p


def _check_rows(n: int, count: int, device: torch.device) -> torch.Tensor:
    """Up to ``count`` query indices spread evenly over 0…n−1, first and last included."""
    return torch.linspace(0, n - 1, steps=min(n, count), device=device).round().long().unique()  # (R,)


def _accuracy(config: bench.BenchConfig, rows: int) -> AccuracyCheck | None:
    """FlashAttention's rule on the implementation's output for the benchmark's own inputs."""
    impl = bench.get_impl(config.impl)
    q, k, v = bench.make_inputs(config)  # the seed run_config used: the very inputs that were timed
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = torch.as_tensor(impl.run(impl.prepare(q, k, v), config.causal))
        return flash_rule(out, q, k, v, is_causal=config.causal, rows=_check_rows(config.n, rows, q.device))
    except (RuntimeError, MemoryError):
        return None  # it ran when timed; out of memory only now, beside the reference's tensors
    finally:
        q = k = v = None
        gc.collect()
        if config.device.startswith("cuda"):
            torch.cuda.empty_cache()


def measure(
    impls: Sequence[str],
    plan: Sequence[tuple[str, int]],
    *,
    device: str,
    heads: int,
    batch: int,
    d: int,
    min_run_time: float,
    check_rows: int,
    cap_bytes: int | None,
    stream: TextIO,
) -> list[ReportRow]:
    """Run every implementation at every (dtype, n) of ``plan``; one progress line each."""
    results: list[tuple[bench.BenchResult, AccuracyCheck | None]] = []
    for dtype, n in plan:
        for name in impls:
            config = bench.BenchConfig(name, n, d=d, heads=heads, batch=batch, dtype=dtype, device=device)
            row = bench.run_config(config, cap_bytes=cap_bytes, min_run_time=min_run_time)
            check = _accuracy(config, check_rows) if row.status == "ok" else None
            results.append((row, check))
            what = f"{row.median_ms:.3f} ms" if row.status == "ok" else f"{row.status}: {row.note}"
            stream.write(f"  {dtype:8} n={n:<6} {name:15} {what}\n")
            stream.flush()
    sdpa = {(r.dtype, r.n): r.median_ms for r, _ in results if r.impl == "sdpa" and r.status == "ok"}
    out = []
    for r, check in results:
        base = sdpa.get((r.dtype, r.n))
        out.append(
            ReportRow(
                impl=r.impl,
                dtype=r.dtype,
                n=r.n,
                status=r.status,
                note=r.note,
                backend=r.backend,
                median_ms=r.median_ms,
                vs_sdpa=r.median_ms / base if r.median_ms and base else None,
                peak_bytes=r.peak_bytes,
                predicted_bytes=r.predicted_bytes,
                error=None if check is None else check.error,
                baseline_error=None if check is None else check.baseline_error,
                verdict="" if check is None else ("pass" if check.passes else "FAIL"),
            )
        )
    return out


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def format_report(rows: Sequence[ReportRow]) -> str:
    """An aligned table; rows that did not run carry their reason on the right."""
    head = ("impl", "dtype", "n", "ms", "×sdpa", "peak", "predicted", "peak/pred", "err vs f64", "2× rule", "backend")
    lines = []
    for r in rows:
        ratio = r.peak_bytes / r.predicted_bytes if r.peak_bytes is not None and r.predicted_bytes else None
        rule = "–"
        if r.error is not None and r.baseline_error is not None:
            rule = f"{r.verdict} ({r.error / r.baseline_error:.2f}×)" if r.baseline_error else r.verdict
        cells = (
            r.impl,
            r.dtype,
            str(r.n),
            _fmt(r.median_ms, ".3f"),
            _fmt(r.vs_sdpa, ".2f"),
            bench.format_bytes(r.peak_bytes),
            bench.format_bytes(r.predicted_bytes),
            _fmt(ratio, ".2f"),
            _fmt(r.error, ".1e"),
            rule,
            r.backend if r.status == "ok" else f"{r.status}: {r.note}",
        )
        lines.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in lines)) if lines else len(h) for i, h in enumerate(head)]
    text = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    text.append("  ".join("-" * w for w in widths))
    text += ["  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() for cells in lines]
    return "\n".join(text)


def _summary(rows: Sequence[ReportRow]) -> list[str]:
    """The goals in one glance: memory within 20 %, the 2× rule, and the slopes where time grows."""
    ok = [r for r in rows if r.status == "ok"]
    lines = []
    measured = [r for r in ok if r.peak_bytes is not None and r.n >= 1024]
    off = [r for r in measured if abs(r.peak_bytes / r.predicted_bytes - 1) > 0.2]
    lines.append(
        f"memory model within 20 % at n ≥ 1024: {len(measured) - len(off)}/{len(measured)}"
        + ("" if not off else " (off: " + ", ".join(f"{r.impl} {r.dtype} n={r.n}" for r in off) + ")")
    )
    judged = [r for r in ok if r.verdict]
    failed = [r for r in judged if r.verdict != "pass"]
    lines.append(
        f"FlashAttention's 2× rule: {len(judged) - len(failed)}/{len(judged)} pass"
        + ("" if not failed else " (fail: " + ", ".join(f"{r.impl} {r.dtype} n={r.n}" for r in failed) + ")")
    )
    for dtype in dict.fromkeys(r.dtype for r in ok):
        results = [
            bench.BenchResult(impl=r.impl, n=r.n, dtype=r.dtype, median_ms=r.median_ms, peak_bytes=r.peak_bytes,
                              predicted_bytes=r.predicted_bytes, status="ok")
            for r in ok
            if r.dtype == dtype
        ]
        for fit in bench.scaling_fits(results, min_n=1).values():
            lines.append(f"{dtype} {fit.describe()}")
    return lines


def main(argv: Sequence[str] | None = None, stream: TextIO | None = None) -> int:
    out = sys.stdout if stream is None else stream
    args = _parser().parse_args(argv)
    if str(args.device).strip().lower().startswith("cuda") and not torch.cuda.is_available():
        out.write(NO_GPU.format(torch=torch.__version__, cuda=torch.version.cuda or "none") + "\n")
        return 2
    try:
        device = str(bench.BenchConfig("sdpa", 1, device=args.device).device)
        unknown = [name for name in args.impl if name not in bench.IMPLEMENTATIONS]
        if unknown:
            known = ", ".join(bench.IMPLEMENTATIONS)
            raise ValueError(f"unknown implementation(s) {', '.join(unknown)}; known: {known}")
        if args.check_rows < 1 or args.min_run_time < 0:
            raise ValueError("--check-rows must be ≥ 1 and --min-run-time ≥ 0")
        cap = None if args.cap_gb is None else int(args.cap_gb * 2**30)
        plan = [("float16", n) for n in args.n] + [("float32", n) for n in args.fp32_n]
        for _dtype, n in plan:
            bench.BenchConfig("sdpa", n, d=args.d, heads=args.heads, batch=args.batch)  # validates n, d, heads, batch
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2

    env = bench.environment(device)
    out.write(
        f"{env['device name']} · {device} · torch {env['torch']} · CUDA {env['CUDA']} · cuDNN {env['cuDNN']} · "
        f"TF32 matmul {env['TF32 matmul']}\n"
        f"batch {args.batch}, {args.heads} heads, d = {args.d}, no mask · memory cap "
        f"{bench.format_bytes(cap if cap is not None else bench.default_cap_bytes(device))} per configuration\n\n"
    )
    load = bench.cpu_load_per_core()
    if load is not None and load > 1.5:
        out.write(
            f"warning: the load average is {load:.1f} per core; other processes compete for the CPU, which "
            "issues every kernel launch, so small and launch-bound timings here are disturbed\n\n"
        )
    start = time.perf_counter()
    rows = measure(
        args.impl,
        plan,
        device=device,
        heads=args.heads,
        batch=args.batch,
        d=args.d,
        min_run_time=args.min_run_time,
        check_rows=args.check_rows,
        cap_bytes=cap,
        stream=out,
    )
    out.write("\n" + format_report(rows) + "\n\n")
    for line in _summary(rows):
        out.write(line + "\n")
    out.write(f"wall time {time.perf_counter() - start:.0f} s\n")
    if args.csv:
        with open(args.csv, "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(ReportRow.__dataclass_fields__), lineterminator="\n")
            writer.writeheader()
            for r in rows:
                writer.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})
        out.write(f"wrote {args.csv}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
