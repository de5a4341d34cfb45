"""Beyond n²: the efficient-attention routes beside exact attention, one concept per module. The benchmark
(:mod:`attention_core.bench.routes`) measures their time and memory and imports this package: never the reverse.
"""

from .accuracy import Accuracy, ErrorCurve, compare, random_qkv, relative_error, row_kl
from .flex import (
    MAX_COMPILE_KEYS,
    NO_COMPILE_ENV,
    FlexBlockMask,
    FlexPlan,
    FlexUnavailable,
    compiled_keys,
    flex_available,
    flex_block_mask,
    flex_plan,
)
from .linear import elu_feature_map, feature_attention, linear_attention, linear_attention_recurrent
from .lowrank import PROJECTIONS, Spectrum, attention_spectrum, linformer_attention, linformer_projections
from .lra import LRA_RESULTS, ROUTE_OF_MODEL, SOURCE, LRAResult, lra_result
from .masked import BACKENDS, MaskedAttention, masked_attention
from .patterns import (
    EMPTY,
    FLEX_BLOCK,
    FULL,
    PARTIAL,
    BlockSummary,
    MaskMod,
    and_masks,
    bigbird,
    block_summary,
    causal,
    dense_mask,
    dilated_window,
    or_masks,
    sliding_window,
    window_with_globals,
)
from .performer import favor_features, orthogonal_features, performer_attention
from .real import AttendsMost, LayerSwap, swap_layer
from .variants import (
    PATTERNS,
    VARIANTS,
    VariantOutput,
    compare_variant,
    error_curve,
    variant_attention,
    variant_pattern,
)
