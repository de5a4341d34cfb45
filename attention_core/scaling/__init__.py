"""Why attention divides by √d_k, measured rather than asserted.

For q, k with independent zero-mean, unit-variance components,

    Var(q·k) = Σᵢ Var(qᵢ kᵢ) = d_k,     so     Var(q·k / √d_k) = 1.

Each module samples one consequence and returns the numbers a page shows next to the theory: the
variance, a saturating softmax, other scalings, the initialisation, overflow and a toy model trained with
and without the scaling. Every function is seeded (one d_k's samples never depend on the other d_k asked
for) and takes a ``device``, by default torch's default device, as ``torch.ones`` does.
"""

from ._sampling import MAX_D_K, MAX_KEYS, MAX_SAMPLES, entropy_pct, row_entropy, softmax_jacobian
from .initialisation import init_effects, named_init_stds
from .saturation import RowSample, gradient_table, sample_row, saturation_table, temperature_sweep
from .stability import DTYPES, naive_softmax, overflow_limit, overflow_logits, overflow_sweep, softmax_overflow
from .strategies import STRATEGY_NAMES, scaling_strategies
from .training import DEFAULT_LR, SMOOTH, train_toy, training_summary
from .variance import DEFAULT_SAMPLES, INITS, dot_product_histograms, histogram_table, variance_table
