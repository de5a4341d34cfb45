"""The explorer's settings: the choices its widgets offer, the sizes that bound its cost, the shared controls."""

from __future__ import annotations

from dataclasses import dataclass

from attention_core import default_device

DIMS = tuple(2**i for i in range(13))  # 1 … 4096
DEVICE = str(default_device())  # the core uses torch's default device unless told: the app tells it
KEY_CHOICES = (2, 4, 8, 16, 32, 64, 128)
SAMPLE_CHOICES = (1_000, 2_000, 5_000, 10_000, 20_000)  # 20,000 × (1 + … + 4096) × 2 ≈ 330M draws, ≈ 2 s
# The variance tab first shows an estimate from this many samples (a tenth of the time), and
# refines it to the chosen count in the background: the page is up at once on a cold visit.
QUICK_SAMPLES = 2_000
TAU_CHOICES = tuple(float(f"{2 ** (k / 2):.3g}") for k in range(-4, 25))  # 0.25 … 4096, 3 significant digits
MAG_CHOICES = (1, 2, 5, 8, 10, 11, 12, 15, 20, 50, 80, 88, 89, 90, 100, 200, 500, 1000)
D_MODEL_CHOICES = (16, 32, 64, 128, 256, 512, 1024)
LR_CHOICES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
STEP_CHOICES = (100, 200, 300, 500)
# The toy model's cost per step grows with batch × keys × d_k: batch × keys is held at 512 tokens
# and steps × d_k at 200 × 4096, so the slowest setting costs what 200 steps at d_k = 4096 cost
# (a few seconds for both runs on 2 cores, ≈ 10 MB of activations).
TOKENS_PER_STEP = 512
STEP_BUDGET = 200 * 4096
TRAIN_INITS = {"lecun": "1/√d_model", "xavier": "Xavier", "0.01": "0.01", "0.5": "0.5"}
DTYPE_CHOICES = ("float32", "float16")
VECTORS = 256 * 17  # query + key vectors per d_k: 256 rows of 16 keys; fewer rows when there are more keys
TOY_D_MODEL = 16
THRESHOLD = 0.1  # the training loss that counts as "learned"


@dataclass(frozen=True)
class Shared:
    """The controls above the tabs, and talk mode."""

    d_k: int
    n_keys: int
    seed: int
    talk: bool
