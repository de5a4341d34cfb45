"""Why attention divides by √d_k, measured rather than asserted.

For q, k with independent zero-mean, unit-variance components,

    Var(q·k) = Σᵢ Var(qᵢ kᵢ) = d_k,     so     Var(q·k / √d_k) = 1.

The functions below sample that claim and its consequences, each returning the
numbers a page shows next to the theory, one concept per module:

* :mod:`.variance` — :func:`variance_table`, :func:`dot_products`: the variance of q·k against d_k;
* :mod:`.saturation` — :func:`saturation_table`, :func:`temperature_sweep`, :func:`sample_row`: how a
  softmax row saturates (entropy falls, the largest weight tends to 1);
  :func:`gradient_table`: how little gradient a saturated softmax passes back (via ``torch.autograd``);
* :mod:`.strategies` — :func:`scaling_strategies`: other divisors, a fitted temperature, cosine attention;
* :mod:`.initialisation` — :func:`init_effects`: how the projections' initial std sets the score variance;
* :mod:`.stability` — :func:`softmax_overflow`, :func:`overflow_sweep`: why softmax subtracts the row max;
* :mod:`.training` — :func:`train_toy`, :func:`training_summary`: a tiny retrieval model trained with
  and without the scaling;
* :mod:`._sampling` — what they share: the limits, seeded generators, random rows, :func:`row_entropy`
  and :func:`softmax_jacobian` (the Jacobian of a saturated softmax is ≈ 0).

Every function is seeded (same arguments, same numbers on one device) and takes a
``device``, by default torch's default device as for ``torch.ones`` (the app passes its
own). Samples for one d_k come from a generator seeded by ``(seed, d_k, …)``,
so a d_k's numbers do not depend on which other d_k were asked for.
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
