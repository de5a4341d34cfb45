"""Beyond n²: the efficient-attention routes, measured against exact attention.

One concept per module:

- :mod:`.patterns`: sparse patterns as tiny mask functions (sliding window, globals, dilated,
  BigBird, causal), their dense mask and their tile-level summary;
"""

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
    "EMPTY",
    "FLEX_BLOCK",
    "FULL",
    "PARTIAL",
    "BlockSummary",
    "MaskMod",
    "and_masks",
    "bigbird",
    "block_summary",
    "causal",
    "dense_mask",
    "dilated_window",
    "or_masks",
    "padded_length",
    "sliding_window",
    "window_with_globals",
]
