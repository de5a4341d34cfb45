"""The computational core of the attention dashboard: pure torch, no UI.

Re-exported here: what a library user reaches for first (torch only, so the import costs what torch's does).
Heavier parts are imported from their own path: ``.bench``, ``.scaling`` (pandas), ``.bert``, ``.decoder``,
``.kv_cache``, ``.tiled_triton``, and the walkthrough's data (``.presets``, ``.walkthrough``).
"""

from .accuracy import AccuracyCheck, flash_rule
from .attention import AttentionTrace, attention_trace, dot_product_attention, row_entropy, stable_softmax
from .device import DeviceInfo, available_devices, default_device, device_info, new_tensor_device, resolve_device
from .heads import (
    MultiHeadTrace,
    attention_parameters,
    check_head_counts,
    kv_head_of,
    mean_pool_kv,
    merge_heads,
    multi_head_attention,
    multi_head_trace,
    repeat_kv,
    split_heads,
)
from .layers import SelfAttention, project_qkv, sinusoidal_positions, xavier_std
from .masks import causal_mask, padding_mask
from .textbook import reference_attention, textbook_attention
from .tiled import tiled_attention, tiled_extra_bytes
