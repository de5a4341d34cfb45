"""Beyond n²: the efficient-attention routes, measured against exact attention.

One concept per module:

- :mod:`.patterns`: sparse patterns as tiny mask functions (sliding window, globals, dilated,
  BigBird, causal), their dense mask and their tile-level summary;
- :mod:`.flex`: FlexAttention with a block mask, compiled once per shape per process;
- :mod:`.masked`: attention under a pattern on three backends (our core, torch SDPA, FlexAttention);
- :mod:`.accuracy`: relative error and per-row KL against exact attention, error curves;
"""

from .accuracy import Accuracy, ErrorCurve, compare, exact_attention, random_qkv, relative_error, row_kl
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

__all__ = [
    "BACKENDS",
    "EMPTY",
    "FLEX_BLOCK",
    "FULL",
    "MAX_COMPILE_KEYS",
    "NO_COMPILE_ENV",
    "PARTIAL",
    "Accuracy",
    "BlockSummary",
    "ErrorCurve",
    "FlexBlockMask",
    "FlexPlan",
    "FlexUnavailable",
    "MaskMod",
    "MaskedAttention",
    "and_masks",
    "bigbird",
    "block_summary",
    "causal",
    "compare",
    "compiled_keys",
    "dense_mask",
    "dilated_window",
    "exact_attention",
    "flex_available",
    "flex_block_mask",
    "flex_plan",
    "masked_attention",
    "masked_weights",
    "or_masks",
    "padded_length",
    "random_qkv",
    "relative_error",
    "row_kl",
    "sliding_window",
    "window_with_globals",
]
