"""tiled-triton against torch SDPA forced to its flash kernel, side by side on one CUDA GPU.

    python benchmarks/triton_report.py [--n 4096 8192 16384] [--d 64] [--heads 16] [--batch 1]
                                       [--dtype float16] [--causal] [--repeats 7]

For each n, in one process: both kernels are warmed up (the Triton autotuner picks its tiles
for the shape during that call), then timed with CUDA events in ``--repeats`` alternating
rounds, so a clock or thermal drift hits both sides. Prints per-call time, the speed ratio
SDPA-flash time / tiled-triton time (the issue's goal: ≥ 0.6 at n = 4096, 8192 and 16384,
float16, d = 64, 16 heads, batch 1, on an H100), TFLOP/s, peak memory against each memory
model, and the error against a float64 reference at the full size, with FlashAttention's
rule: at most twice the error of the traced path in the same dtype. The reference and the
traced path run in blocks of query rows, so no full ``n × n`` matrix is ever held.

A machine without a CUDA GPU and Triton gets one sentence and exit status 1.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attention_core import bench, dot_product_attention
from attention_core.bench.impls import triton_config_label
from attention_core.tiled_triton import NEEDS_GPU, triton_available

ROWS_PER_BLOCK = 1024  # query rows per block of the float64 reference: 16 heads × 1024 × 16384 × 8 B = 2 GiB


def _ms_per_call(fn, calls: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def _errors(q, k, v, causal: bool, outs: dict[str, torch.Tensor]) -> dict[str, float]:
    """Max |out − float64 reference| for each output, and for the traced path in q's dtype."""
    n = q.shape[-2]
    worst = dict.fromkeys([*outs, "traced"], 0.0)
    k64, v64 = k.double(), v.double()
    cols = torch.arange(n, device=q.device)
    for i0 in range(0, n, ROWS_PER_BLOCK):
        i1 = min(i0 + ROWS_PER_BLOCK, n)
        # Causal, top-left aligned: row i sees keys 0..i. As an explicit mask, so a block of rows keeps its offset.
        mask = (cols <= torch.arange(i0, i1, device=q.device)[:, None]) if causal else None  # (Bq, n)
        ref = dot_product_attention(q[..., i0:i1, :].double(), k64, v64, attn_mask=mask)  # (B, H, Bq, d)
        plain = dot_product_attention(q[..., i0:i1, :], k, v, attn_mask=mask)  # (B, H, Bq, d)
        for name, out in [*outs.items(), ("traced", plain)]:
            block = out if name == "traced" else out[..., i0:i1, :]
            worst[name] = max(worst[name], float((block.double() - ref).abs().max()))
        del ref, plain
    return worst


def report_n(n: int, args: argparse.Namespace) -> None:
    names = ("tiled-triton", "sdpa-flash")
    configs = {
        name: bench.BenchConfig(name, n, d=args.d, heads=args.heads, batch=args.batch, dtype=args.dtype,
                                causal=args.causal, device="cuda")
        for name in names
    }
    q, k, v = bench.make_inputs(configs["tiled-triton"])
    impls = {name: bench.get_impl(name) for name in names}
    runs = {name: (lambda impl=impl: impl.run((q, k, v), args.causal)) for name, impl in impls.items()}

    outs = {}
    for name in names:
        outs[name] = runs[name]()  # warm-up; for tiled-triton, the autotuner's timing of its configs
    torch.cuda.synchronize()
    label = triton_config_label()

    peaks = {}
    for name in names:
        peaks[name], _ = bench.measure_peak_extra(runs[name], "cuda")

    first = _ms_per_call(runs["sdpa-flash"], 3)
    calls = max(3, int(50.0 / max(first, 1e-3)))  # about 50 ms of calls per round and side
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.repeats):
        for name in names:
            times[name].append(_ms_per_call(runs[name], calls))
    ms = {name: statistics.median(t) for name, t in times.items()}

    errs = _errors(q, k, v, args.causal, outs)
    ratio = ms["sdpa-flash"] / ms["tiled-triton"]
    print(f"\nn = {n} · {label} · {args.repeats} rounds of {calls} calls per side")
    print(f"  {'impl':<13} {'ms/call':>9} {'TFLOP/s':>8} {'peak MiB':>9} {'model MiB':>10} {'max err':>9}")
    for name in names:
        c = configs[name]
        tflops = c.flops() / (ms[name] * 1e-3) / 1e12
        model = impls[name].extra_bytes(c) / 2**20
        peak = "–" if peaks[name] is None else f"{peaks[name] / 2**20:.1f}"
        print(f"  {name:<13} {ms[name]:>9.3f} {tflops:>8.1f} {peak:>9} {model:>10.1f} {errs[name]:>9.2e}")
    baseline = f"{errs['traced']:>9.2e}  (the traced path, same dtype: the rule's baseline)"
    print(f"  {'traced':<13} {'':>9} {'':>8} {'':>9} {'':>10} {baseline}")
    rule = errs["tiled-triton"] <= 2 * errs["traced"]
    goal = "met" if ratio >= 0.6 else "NOT met"
    print(f"  speed, SDPA-flash time / tiled-triton time: {ratio:.2f}  (goal ≥ 0.6: {goal})")
    print(f"  error ≤ 2 × the traced path's: {'yes' if rule else 'NO'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", nargs="+", type=int, default=[4096, 8192, 16384])
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--dtype", choices=["float16", "bfloat16", "float32"], default="float16")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--repeats", type=int, default=7, help="alternating timing rounds per side")
    args = p.parse_args(argv)
    reason = triton_available("cuda") if torch.cuda.is_available() else NEEDS_GPU
    if reason or args.repeats < 1:
        print(f"This report {reason or 'needs --repeats ≥ 1'}; nothing was measured.", file=sys.stderr)
        return 1
    env = bench.environment("cuda")
    shape = f"{args.dtype}, d = {args.d}, {args.heads} heads, batch {args.batch}{', causal' if args.causal else ''}"
    print(f"{env.get('device name', 'CUDA')} · torch {torch.__version__} · {shape}")
    with torch.no_grad():
        for n in args.n:
            report_n(n, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
