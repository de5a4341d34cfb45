"""Does training stall without ÷√d_k? The toy retrieval model of the √d_k explorer, swept.

For each d_k, optimizer and initial std, the scaled and the unscaled model are trained from the
same start on the same data (``attention_core.train_toy``), for several seeds. Printed per
setting: the median over seeds of the steps until the 10-step mean loss falls below 0.1 ("—"
when a run never gets there: the count is then steps + 1 for the median), the mean final loss,
and how many unscaled runs *stalled* (final loss above 90% of the starting loss). Also the wall
time of the page's default setting (both runs), whose goal is ≤ 5 s on 2 CPU cores.

    python benchmarks/scaling_training.py              # the full sweep (a few minutes on 2 cores)
    python benchmarks/scaling_training.py --quick      # fewer widths and seeds
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attention_core.scaling import DEFAULT_LR, named_init_stds, train_toy, training_summary  # noqa: E402

THRESHOLD = 0.1
PAGE_DEFAULT = {"d_k": 512, "n_keys": 16, "steps": 200, "optimizer": "adam", "init": "1/√d_model"}
D_MODEL = 16


def run_pair(d_k: int, n_keys: int, steps: int, optimizer: str, init: str, seed: int) -> dict[str, float]:
    std = named_init_stds(D_MODEL, d_k)[init]
    runs = {
        name: train_toy(name == "scaled", d_k, d_model=D_MODEL, n_keys=n_keys, steps=steps, optimizer=optimizer,
                        lr=DEFAULT_LR[optimizer], init_std=std, seed=seed)
        for name in ("scaled", "unscaled")
    }
    s = training_summary(runs, THRESHOLD).set_index("run")
    out: dict[str, float] = {}
    for name in ("scaled", "unscaled"):
        reach = s.loc[name, "steps_to_threshold"]
        out[f"{name}_steps"] = steps + 1 if reach != reach else float(reach)  # NaN: never
        out[f"{name}_end"] = float(s.loc[name, "end_loss"])
        out[f"{name}_start"] = float(s.loc[name, "start_loss"])
    out["stalled"] = float(out["unscaled_end"] > 0.9 * out["unscaled_start"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="widths 64, 1024 and 2 seeds")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--keys", type=int, default=16)
    args = ap.parse_args()
    dims = (64, 1024) if args.quick else (16, 64, 256, 1024, 4096)
    seeds = range(2 if args.quick else 3)

    d = PAGE_DEFAULT
    train_toy(True, 8, steps=2)  # warm-up (first calls of the kernels)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        run_pair(d["d_k"], d["n_keys"], d["steps"], d["optimizer"], d["init"], 0)
        times.append(time.perf_counter() - t0)
    print(f"Page default (d_k={d['d_k']}, n={d['n_keys']}, {d['steps']} steps, Adam): both runs take median "
          f"{statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}); goal ≤ 5 s.\n")

    header = (f"{'optimizer':<9} {'init':<11} {'d_k':>5}  {'steps to <0.1: scaled':>22} {'unscaled':>9}  "
              f"{'final loss: scaled':>19} {'unscaled':>9}  {'unscaled stalled':>16}")  # fmt: skip
    print(f"{len(seeds)} seeds each, {args.steps} steps, n = {args.keys} keys; medians of steps, means of losses. "
          f"'—' = not reached in {args.steps} steps.")  # fmt: skip
    print(header)
    print("-" * len(header))
    for optimizer in ("adam", "sgd"):
        for init in ("1/√d_model", "0.5"):
            for d_k in dims:
                rows = [run_pair(d_k, args.keys, args.steps, optimizer, init, s) for s in seeds]

                def steps(name: str, rows: list[dict[str, float]] = rows) -> str:
                    m = statistics.median(r[f"{name}_steps"] for r in rows)
                    return "—" if m > args.steps else f"{m:.0f}"

                def end(name: str, rows: list[dict[str, float]] = rows) -> str:
                    return f"{statistics.mean(r[f'{name}_end'] for r in rows):.3f}"

                stalled = sum(int(r["stalled"]) for r in rows)
                print(f"{optimizer:<9} {init:<11} {d_k:>5}  {steps('scaled'):>22} {steps('unscaled'):>9}  "
                      f"{end('scaled'):>19} {end('unscaled'):>9}  {stalled:>13}/{len(rows)}")  # fmt: skip
                sys.stdout.flush()


if __name__ == "__main__":
    main()
