"""What the explorer's tabs share: the widths, the choices more than one module reads, the sizes that bound its cost."""

from __future__ import annotations

from dataclasses import dataclass

DIMS = tuple(2**i for i in range(13))  # 1 … 4096
TAU_CHOICES = tuple(float(f"{2 ** (k / 2):.3g}") for k in range(-4, 25))  # 0.25 … 4096, 3 significant digits
MAG_CHOICES = (1, 2, 5, 8, 10, 11, 12, 15, 20, 50, 80, 88, 89, 90, 100, 200, 500, 1000)
STEP_CHOICES = (100, 200, 300, 500)
VECTORS = 256 * 17  # query + key vectors per d_k: 256 rows of 16 keys; fewer rows when there are more keys
TOY_D_MODEL = 16
THRESHOLD = 0.1  # the training loss that counts as "learned"


# The toy model's cost per step grows with batch × keys × d_k: batch × keys is held at 512 tokens and steps × d_k
# at 200 × 4096, so the slowest setting costs what 200 steps at d_k = 4096 cost (a few seconds for both runs on
# 2 cores, ≈ 10 MB of activations).
def toy_batch(n_keys: int) -> int:
    return max(4, 512 // n_keys)


def step_choices(d_k: int) -> tuple[int, ...]:
    return tuple(s for s in STEP_CHOICES if s * d_k <= 200 * 4096)


@dataclass(frozen=True)
class Shared:
    """The controls above the tabs, and talk mode."""

    d_k: int
    n_keys: int
    seed: int
    talk: bool
