"""FlashAttention's 2× rule for tiled_attention in float16 and bfloat16, seed by seed: the worst margin.

For every seed, the tiled kernel's largest error against float64 (output, and dQ, dK, dV by
autograd) must be at most twice the error of the textbook code run in the same dtype, plus 1e-5.
The seeds ride along the batch axis, so one call checks a whole group of them; the shapes are odd
on purpose: lengths that are no multiple of the block, L ≠ S, d from 16 to 128.

    python benchmarks/tiled_precision.py            # 8 shapes × 32 seeds per dtype
    python benchmarks/tiled_precision.py --seeds 64

It prints, per dtype and quantity, the worst ratio error ÷ (2 × baseline error + 1e-5): at most 1
passes. The test (tests/test_tiled_precision.py) runs the same function on fewer shapes.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attention_core.textbook import textbook_attention
from attention_core.tiled import tiled_attention

ABS_FLOOR = 1e-5  # the "+ 1e-5"
BLOCK = 32  # small, so that every shape below spans several tiles and ends on a partial one

# (L, S, d, causal): lengths no multiple of the block, L ≠ S, d in 16…128
SHAPES: tuple[tuple[int, int, int, bool], ...] = (
    (97, 131, 32, False),
    (45, 70, 16, False),
    (70, 45, 64, True),
    (33, 95, 128, False),
    (61, 61, 48, True),
    (17, 129, 80, False),
    (100, 37, 24, True),
    (53, 77, 112, False),
)
QUANTITIES = ("out", "dq", "dk", "dv")


@dataclass(frozen=True)
class Margins:
    """Per seed, error ÷ (2 × baseline error + 1e-5) for the output and each gradient: ``(seeds,)`` each."""

    out: torch.Tensor
    dq: torch.Tensor
    dk: torch.Tensor
    dv: torch.Tensor

    def worst(self) -> dict[str, float]:
        return {name: float(getattr(self, name).max()) for name in QUANTITIES}


def _run(attention, q, k, v, d_out, causal, dtype):
    leaves = [x.detach().to(dtype).requires_grad_(True) for x in (q, k, v)]
    out = attention(*leaves, is_causal=causal)
    grads = torch.autograd.grad(out, leaves, d_out.to(dtype))
    return (out.detach(), *grads)


def seed_margins(
    n_q: int, n_k: int, d: int, causal: bool, dtype: torch.dtype, seeds: int, *,
    first_seed: int = 0, block: int = BLOCK, heads: int = 2,
) -> Margins:  # fmt: skip
    """The 2× margins of ``seeds`` seeds at one shape; the seeds are the batch axis of one call."""
    g = torch.Generator().manual_seed(first_seed * 1_000_003 + n_q * 1009 + n_k * 101 + d)
    q, k, v, d_out = (
        torch.randn(seeds, heads, n, d, generator=g, dtype=torch.float64).to(dtype).double()  # exact in dtype
        for n in (n_q, n_k, n_k, n_q)
    )

    def tiled(q, k, v, is_causal):
        return tiled_attention(q, k, v, is_causal=is_causal, block_size=block)

    def textbook(q, k, v, is_causal):
        return textbook_attention(q, k, v, is_causal=is_causal)

    reference = _run(textbook, q, k, v, d_out, causal, torch.float64)
    baseline = _run(textbook, q, k, v, d_out, causal, dtype)
    mine = _run(tiled, q, k, v, d_out, causal, dtype)

    def per_seed(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        return (x.double() - ref).abs().flatten(1).amax(dim=1)  # (seeds,)

    ratios = [
        per_seed(m, r) / (2 * per_seed(b, r) + ABS_FLOOR) for m, b, r in zip(mine, baseline, reference, strict=True)
    ]
    return Margins(*ratios)


def worst_margins(
    dtype: torch.dtype, seeds: int, shapes: tuple[tuple[int, int, int, bool], ...] = SHAPES
) -> tuple[dict[str, float], int]:
    """The worst margin of each quantity over every shape and seed, and the number of seeds checked."""
    worst = dict.fromkeys(QUANTITIES, 0.0)
    for n_q, n_k, d, causal in shapes:
        for name, value in seed_margins(n_q, n_k, d, causal, dtype, seeds).worst().items():
            worst[name] = max(worst[name], value)
    return worst, seeds * len(shapes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=32, help="seeds per shape (default 32)")
    args = parser.parse_args()
    print(f"FlashAttention's rule, tiled_attention (block {BLOCK}) vs the textbook code, both against float64")
    print("margin = error ÷ (2 × textbook error + 1e-5); ≤ 1 passes\n")
    print(f"{'dtype':10} {'seeds':>6} " + " ".join(f"{name:>6}" for name in QUANTITIES))
    for dtype in (torch.float16, torch.bfloat16):
        worst, n = worst_margins(dtype, args.seeds)
        name = str(dtype).removeprefix("torch.")
        print(f"{name:10} {n:>6} " + " ".join(f"{worst[q]:6.3f}" for q in QUANTITIES))


if __name__ == "__main__":
    main()
