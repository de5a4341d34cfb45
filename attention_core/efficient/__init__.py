"""Beyond n²: the efficient-attention routes, compared with exact attention. (Their time and memory are
measured by the benchmark, :mod:`attention_core.bench.routes`, which imports this package: never the reverse.)

One concept per module:

- :mod:`.patterns`: sparse patterns as tiny mask functions (sliding window, globals, dilated,
  BigBird, causal), their dense mask and their tile-level summary;
- :mod:`.flex`: FlexAttention with a block mask, compiled once per shape per process;
- :mod:`.masked`: attention under a pattern on three backends (our core, torch SDPA, FlexAttention);
- :mod:`.linear`: linear attention (elu + 1), parallel, chunked causal and recurrent;
- :mod:`.performer`: FAVOR+ with orthogonal positive random features;
- :mod:`.lowrank`: Linformer's projection and the singular-value spectrum of attention;
- :mod:`.accuracy`: relative error and per-row KL against exact attention, error curves;
- :mod:`.variants`: every route as one call with plain arguments, with its weights;
- :mod:`.real`: a trained model's layer with its softmax swapped for a route;
- :mod:`.lra`: the published Long Range Arena figures.
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
from .linear import (
    elu_feature_map,
    feature_attention,
    linear_attention,
    linear_attention_recurrent,
    linear_weights,
)
from .lowrank import (
    PROJECTIONS,
    Spectrum,
    attention_spectrum,
    linformer_attention,
    linformer_error_curve,
    linformer_projections,
    linformer_weights,
)
from .lra import LRA_RESULTS, ROUTE_OF_MODEL, SOURCE, LRAResult, lra_result
from .masked import BACKENDS, MaskedAttention, masked_attention, masked_weights
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
    padded_length,
    sliding_window,
    window_with_globals,
)
from .performer import (
    favor_features,
    orthogonal_features,
    performer_attention,
    performer_error_curve,
    performer_weights,
)
from .real import AttendsMost, LayerQKV, LayerSwap, layer_qkv, swap_layer
from .variants import PATTERNS, VARIANTS, VariantOutput, compare_variant, variant_attention, variant_pattern
