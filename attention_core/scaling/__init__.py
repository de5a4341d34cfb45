"""Why attention divides by √d_k, measured rather than asserted.

For q, k with independent zero-mean, unit-variance components,

    Var(q·k) = Σᵢ Var(qᵢ kᵢ) = d_k,     so     Var(q·k / √d_k) = 1.

Each module samples one consequence and returns the numbers a page shows next to the theory:
the variance (:mod:`.variance`), a saturating softmax and its vanishing gradient
(:mod:`.saturation`), other scalings (:mod:`.strategies`), the projections' initialisation
(:mod:`.initialisation`), overflow (:mod:`.stability`) and a toy model trained with and without
the scaling (:mod:`.training`); :mod:`._sampling` holds what they share. Every function is seeded
(same arguments, same numbers on one device; one d_k's samples never depend on the other d_k
asked for) and takes a ``device``, by default torch's default device, as ``torch.ones`` does.
"""

from ._sampling import (
    MAX_D_K,
    MAX_KEYS,
    MAX_SAMPLES,
    OPTIMIZERS,
    SCALE_RULES,
    row_entropy,
    softmax_jacobian,
)
from ._sampling import _Optimizer as _Optimizer  # the tests hold it to torch.optim's update rules
from .initialisation import init_effects, named_init_stds
from .saturation import RowSample, gradient_table, sample_row, saturation_table, temperature_sweep
from .stability import DTYPES, naive_softmax, overflow_limit, overflow_logits, overflow_sweep, softmax_overflow
from .strategies import STRATEGY_NAMES, scaling_strategies
from .training import DEFAULT_LR, SMOOTH, train_toy, training_summary
from .variance import DEFAULT_SAMPLES, INITS, dot_product_histograms, dot_products, histogram_table, variance_table
