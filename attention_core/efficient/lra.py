"""Published reference figures: Long Range Arena (Tay et al., ICLR 2021).

"Long Range Arena: A Benchmark for Efficient Transformers", Yi Tay, Mostafa Dehghani et al.,
arXiv:2011.04006. Accuracy (%) per task and the average over the five tasks without Path-X
(every model fails Path-X) from the paper's main results table; speed and memory at 4K tokens
from its efficiency table: training steps per second and peak memory per device on byte-level
text classification, batch 32, 4x4 TPU v3, all models re-implemented in JAX/Flax. Sparse
Transformer and Longformer were left out of the efficiency benchmark (mask-based
implementations, no custom kernels): ``None`` here.

Every average is the mean of the row's five task scores except Sinkhorn Transformer's: the paper
prints 51.39, the mean of its printed scores is 51.48. Kept as published.

These are trained models on TPUs; what this app measures is one attention call on the
viewer's machine. The table is context for the measurements, not a prediction of them.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = (
    "Tay et al., Long Range Arena: A Benchmark for Efficient Transformers, ICLR 2021 (arXiv:2011.04006): "
    "main results table (accuracy) and efficiency table (4K tokens, batch 32, 4x4 TPU v3)"
)


@dataclass(frozen=True)
class LRAResult:
    """One model's published LRA figures. ``speedup_4k`` is steps per second relative to the
    Transformer's at 4K; ``memory_gb_4k`` the peak memory per TPU device at 4K."""

    model: str
    listops: float
    text: float
    retrieval: float
    image: float
    pathfinder: float
    average: float
    steps_per_s_4k: float | None
    speedup_4k: float | None
    memory_gb_4k: float | None


LRA_RESULTS: tuple[LRAResult, ...] = (
    LRAResult("Transformer", 36.37, 64.27, 57.46, 42.44, 71.40, 54.39, 1.4, 1.0, 9.48),
    LRAResult("Local Attention", 15.82, 52.98, 53.39, 41.46, 66.63, 46.06, 7.4, 5.3, 1.37),
    LRAResult("Sparse Trans.", 17.07, 63.58, 59.59, 44.24, 71.71, 51.24, None, None, None),
    LRAResult("Longformer", 35.63, 62.85, 56.89, 42.22, 69.71, 53.46, None, None, None),
    LRAResult("Linformer", 35.70, 53.94, 52.27, 38.56, 76.34, 51.36, 7.7, 5.5, 0.99),
    LRAResult("Reformer", 37.27, 56.10, 53.40, 38.07, 68.50, 50.67, 1.1, 0.8, 2.28),
    LRAResult("Sinkhorn Trans.", 33.67, 61.20, 53.83, 41.23, 67.45, 51.39, 5.3, 3.8, 1.48),
    LRAResult("Synthesizer", 36.99, 61.68, 54.67, 41.61, 69.45, 52.88, 1.9, 1.4, 6.99),
    LRAResult("BigBird", 36.05, 64.02, 59.29, 40.83, 74.87, 55.01, 1.5, 1.1, 2.88),
    LRAResult("Linear Trans.", 16.13, 65.90, 53.09, 42.34, 75.30, 50.55, 7.8, 5.6, 1.03),
    LRAResult("Performer", 18.01, 65.40, 53.82, 42.77, 77.05, 51.41, 8.0, 5.7, 1.06),
)

# The route each of this app's measurements stands for, beside the LRA model it is closest to (the paper's order).
ROUTE_OF_MODEL = {
    "Transformer": "sdpa",
    "Local Attention": "flex-window",
    "Longformer": "window+globals",
    "Linformer": "linformer",
    "BigBird": "bigbird",
    "Linear Trans.": "linear",
    "Performer": "performer",
}


def lra_result(model: str) -> LRAResult:
    """The row of ``model`` (as named in the paper, e.g. ``"Linear Trans."``)."""
    for row in LRA_RESULTS:
        if row.model == model:
            return row
    raise ValueError(f"no LRA row named {model!r}; the rows are {', '.join(r.model for r in LRA_RESULTS)}")
