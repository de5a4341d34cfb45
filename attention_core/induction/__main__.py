"""Remake the shipped induction runs: ``python -m attention_core.induction [--out PATH] [--device cpu]``.

Trains each run of :data:`attention_core.induction.shipped.RUNS` from its seed with the project's own loop
and writes the weights, the settings, the histories and the final scores to one safetensors file.
"""

from __future__ import annotations

import argparse
import sys

from .shipped import RUNS, SHIPPED, make_runs, save_runs
from .training import Progress


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attention_core.induction", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(SHIPPED), help="where to write the file (default: the shipped one)")
    parser.add_argument("--device", default="cpu", help="cpu (the shipped file's), cuda, or auto")
    args = parser.parse_args(argv)

    def log(name: str, p: Progress) -> None:
        if p.step % 100 == 0 or p.step == RUNS[name]["steps"]:
            print(f"{name:10s} step {p.step:5d}  {p.seconds:6.1f} s  loss first {p.loss_first:.3f}  "
                  f"repeat {p.loss_repeat:.3f}  induction score {p.induction_score:.2f}", flush=True)  # fmt: skip

    try:
        runs = make_runs(args.device, log)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    save_runs(runs, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
