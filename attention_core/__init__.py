"""The computational core of the attention dashboard: pure torch, no UI.

Every public name is re-exported here; each submodule holds one concept.
"""

from .attention import AttentionTrace, attention_trace, scaled_dot_product_attention, stable_softmax
from .bench import (
    IMPLEMENTATIONS,
    BenchConfig,
    BenchResult,
    SweepSpec,
    fit_loglog_slope,
    run_config,
    run_sweep,
    running_on_streamlit_cloud,
    score_matrix_bytes,
)
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
from .tiled import tiled_attention, tiled_extra_bytes
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
    "IMPLEMENTATIONS",
    "MASK_KINDS",
    "PRESETS",
    "STEP_NAMES",
    "AttentionTrace",
    "BenchConfig",
    "BenchResult",
    "DeviceInfo",
    "SelfAttention",
    "SweepSpec",
    "WalkthroughInputs",
    "WalkthroughResult",
    "attention_trace",
    "available_devices",
    "build_inputs",
    "build_mask",
    "causal_mask",
    "default_device",
    "device_info",
    "fit_loglog_slope",
    "mask_to_additive",
    "padding_mask",
    "project_qkv",
    "random_example",
    "resolve_device",
    "run_config",
    "run_sweep",
    "run_walkthrough",
    "running_on_streamlit_cloud",
    "scaled_dot_product_attention",
    "score_matrix_bytes",
    "sentence_example",
    "sinusoidal_positions",
    "stable_softmax",
    "tiled_attention",
    "tiled_extra_bytes",
    "tiny_example",
    "top_sources",
    "torch_snippet",
    "xavier_std",
]
