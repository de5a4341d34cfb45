"""The computational core of the attention dashboard: pure torch, no UI.

Every public name is re-exported here; each submodule holds one concept.
"""

from .attention import AttentionTrace, attention_trace, scaled_dot_product_attention, stable_softmax
from .device import DeviceInfo, available_devices, default_device, device_info, resolve_device
from .layers import SelfAttention, project_qkv, sinusoidal_positions, xavier_std
from .masks import causal_mask, mask_to_additive, padding_mask
from .presets import (
    PRESETS,
    WalkthroughInputs,
    build_inputs,
    random_example,
    sentence_example,
    tiny_example,
)
from .walkthrough import (
    MASK_KINDS,
    STEP_NAMES,
    WalkthroughResult,
    build_mask,
    run_walkthrough,
    top_sources,
    torch_snippet,
)

__all__ = [
    "MASK_KINDS",
    "PRESETS",
    "STEP_NAMES",
    "AttentionTrace",
    "DeviceInfo",
    "SelfAttention",
    "WalkthroughInputs",
    "WalkthroughResult",
    "attention_trace",
    "available_devices",
    "build_inputs",
    "build_mask",
    "causal_mask",
    "default_device",
    "device_info",
    "mask_to_additive",
    "padding_mask",
    "project_qkv",
    "random_example",
    "resolve_device",
    "run_walkthrough",
    "scaled_dot_product_attention",
    "sentence_example",
    "sinusoidal_positions",
    "stable_softmax",
    "tiny_example",
    "top_sources",
    "torch_snippet",
    "xavier_std",
]
