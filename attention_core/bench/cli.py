"""``python -m attention_core.bench``: run a sweep from the command line, print a table, write CSV.

    python -m attention_core.bench --impl textbook trace sdpa tiled --n 512 1024 2048 4096 \\
        --d 64 --heads 8 [--kv-heads 2] --batch 1 --dtype float32 --device auto [--causal] \\
        [--mode fwd|bwd|fwd+bwd] [--csv out.csv]
    python -m attention_core.bench --impl sdpa flex-window linear performer linformer --n 1024 4096

With no arguments it runs the dashboard's default sweep (:data:`DEFAULT_SWEEP`) under the
page's time budget. Sizes named with ``--n`` all run: no budget applies unless ``--budget``
is given too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields
from typing import TextIO

from .config import DTYPES, MODES, Shape
from .fits import scaling_fits
from .impls import IMPLEMENTATIONS, get_impl
from .measure import default_cap_bytes, format_bytes
from .run import MIN_SAMPLES, BenchResult, write_csv
from .sweep import (
    DEFAULT_BUDGET_S,
    DEFAULT_MIN_RUN_TIME,
    DEFAULT_SWEEP,
    SweepProgress,
    SweepResult,
    SweepSpec,
    run_sweep,
)


def _impl_name(name: str) -> str:
    """A registry entry, an older name of one (still runs, under today's) or a route with its knob."""
    try:
        get_impl(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name


def _parser() -> argparse.ArgumentParser:
    d = DEFAULT_SWEEP
    p = argparse.ArgumentParser(prog="python -m attention_core.bench",
                                description="Time and measure attention implementations on this machine.")
    p.add_argument("--impl", nargs="+", type=_impl_name, default=list(d.impls), metavar="NAME",
                   help=f"one or more of: {', '.join(IMPLEMENTATIONS)}; a route with its knob, e.g. performer(64)")
    p.add_argument("--n", nargs="+", type=int, default=None,
                   help=f"sequence lengths (default {' '.join(map(str, d.ns))}); all run unless --budget is given")
    p.add_argument("--d", type=int, default=d.d, help="head dimension")
    p.add_argument("--heads", type=int, default=d.heads)
    p.add_argument("--kv-heads", type=int, default=None,
                   help="K/V heads, dividing --heads (default: as many as --heads; fewer is GQA, 1 is MQA)")
    p.add_argument("--batch", type=int, default=d.batch)
    p.add_argument("--dtype", choices=list(DTYPES), default=d.dtype)
    p.add_argument("--device", default=d.device, help="auto, cpu, cuda or cuda:N")
    p.add_argument("--causal", action="store_true", help="apply the causal mask")
    p.add_argument("--mode", choices=list(MODES), default=d.mode, help="the pass timed: fwd (default), bwd "
                   "(the backward alone, the forward run outside the timing) or fwd+bwd (one training step)")
    p.add_argument("--csv", metavar="PATH", help="also write the results as CSV")
    p.add_argument("--budget", type=float, default=None, help="seconds before the sweep stops; 0: none "
                   f"(default: {DEFAULT_BUDGET_S:g} s for the default sizes, none when --n is given)")
    p.add_argument("--cap-gb", type=float, default=None, help="memory cap per configuration, GiB")
    p.add_argument("--min-run-time", type=float, default=DEFAULT_MIN_RUN_TIME, help="seconds of timing per config")
    p.add_argument("--quiet", action="store_true", help="no per-configuration progress lines")
    return p


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def format_table(rows: Sequence[BenchResult]) -> str:
    """The results as an aligned text table."""
    head = ["impl", "n", "mode", "median ms", "IQR ms", "samples", "GFLOP/s", "% peak", "peak mem", "predicted"]
    head += ["max err", "err dQ", "err dK", "err dV", "status"]
    lines = [
        (r.impl, str(r.n), r.mode, _fmt(r.median_ms, ".3f"), _fmt(r.iqr_ms, ".3f"),
         (str(r.samples) + ("*" if r.samples < MIN_SAMPLES else "")) if r.status == "ok" else "–",
         _fmt(r.gflops, ".1f"), _fmt(r.pct_of_peak, ".0f"), format_bytes(r.peak_bytes), format_bytes(r.predicted_bytes),
         *(_fmt(err, ".1e") for err in (r.max_error, r.err_dq, r.err_dk, r.err_dv)),
         r.status + (f" ({r.note})" if r.note else ""))  # an ok row's note: an approximation's error
        for r in rows
    ]  # fmt: skip
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(head)]
    table = [head, ["-" * w for w in widths], *lines]
    out = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in table]
    if any(r.status == "ok" and r.samples < MIN_SAMPLES for r in rows):
        out.append(f"* fewer than {MIN_SAMPLES} timed samples: the time budget ran short; rerun without --budget")
    return "\n".join(out)


def report(result: SweepResult, stream: TextIO) -> None:
    env = result.env
    stream.write(
        f"\n{env.get('device name', '')} · {env.get('device', '')} · torch {env.get('torch', '')} · "
        f"{env.get('threads', '?')} threads · matmul peak {_fmt(result.peak_gflops, '.1f')} GFLOP/s\n\n"
    )
    stream.write(format_table(result.rows) + "\n\n")
    for fit in scaling_fits(result.rows).values():
        stream.write(fit.describe() + "\n")
    tail = f", stopped: {result.stopped}" if result.stopped else ""
    stream.write(f"wall time {result.wall_s:.1f} s{tail}\n")
    if result.disturbed:
        stream.write(
            f"warning: the load average was {result.load_per_core:.1f} per core when the sweep started; "
            "other processes were competing for the CPU, so these timings are disturbed\n"
        )


def main(argv: Sequence[str] | None = None, stream: TextIO | None = None) -> int:
    """Parse ``argv`` (default: the command line), run the sweep, print, and write the CSV."""
    out = sys.stdout if stream is None else stream
    args = _parser().parse_args(argv)
    ns = DEFAULT_SWEEP.ns if args.n is None else tuple(args.n)
    if args.budget is None:  # sizes the user named all run; the default sweep keeps the page's safety net
        args.budget = DEFAULT_BUDGET_S if args.n is None else 0.0
    try:
        shape = {f.name: getattr(args, f.name) for f in fields(Shape)}  # --d, --heads, … --mode
        spec = SweepSpec(tuple(args.impl), ns, **shape)
        configs = spec.configs()
        cap = int(args.cap_gb * 2**30) if args.cap_gb is not None else default_cap_bytes(configs[0].device)
        if cap <= 0:
            raise ValueError("--cap-gb must be positive")

        def show(p: SweepProgress) -> None:
            if p.result is not None and not args.quiet:
                r = p.result
                what = f"{_fmt(r.median_ms, '.2f')} ms" if r.status == "ok" else f"{r.status} {r.note}"
                out.write(f"[{p.done}/{p.total}] {r.impl} n={r.n}: {what}\n")
                out.flush()

        c0 = configs[0]
        heads = f"{c0.heads} heads" + (f", {c0.kv_heads} K/V heads" if c0.grouped else "")
        out.write(f"{len(configs)} {c0.mode} configurations on {c0.device} ({heads}), memory cap {format_bytes(cap)}\n")
        budget = args.budget if args.budget > 0 else None
        result = run_sweep(spec, cap_bytes=cap, budget_s=budget, min_run_time=args.min_run_time, progress=show)
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    report(result, out)
    if args.csv:
        with open(args.csv, "w", encoding="utf-8", newline="") as fh:
            write_csv(result.rows, fh)
        out.write(f"wrote {args.csv}\n")
    return 0
