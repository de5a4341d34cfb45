"""The computational core of the attention dashboard: pure torch, no UI.

Every public name is re-exported here; each submodule holds one concept.

The re-exports are lazy (PEP 562 ``__getattr__``): ``from attention_core import run_walkthrough``
imports :mod:`.walkthrough` and what it needs, not the benchmark or the √d_k explorer's code,
so a page starts without loading the rest (``import torch`` alone takes 1.5–3 s on a small
machine, the benchmark's ``torch.utils.benchmark`` and the explorer's pandas more on top).
A new public name goes into ``_EXPORTS``, beside its submodule.
"""

from __future__ import annotations

import importlib
from typing import Any

# Public name -> the submodule that defines it.
_EXPORTS: dict[str, str] = {
    # attention
    "AttentionTrace": ".attention",
    "attention_trace": ".attention",
    "scaled_dot_product_attention": ".attention",
    "stable_softmax": ".attention",
    # bench
    "IMPLEMENTATIONS": ".bench",
    "BenchConfig": ".bench",
    "BenchResult": ".bench",
    "SweepSpec": ".bench",
    "fit_loglog_slope": ".bench",
    "run_config": ".bench",
    "run_sweep": ".bench",
    "running_on_streamlit_cloud": ".bench",
    "score_matrix_bytes": ".bench",
    # device
    "DeviceInfo": ".device",
    "available_devices": ".device",
    "default_device": ".device",
    "device_info": ".device",
    "resolve_device": ".device",
    # layers
    "SelfAttention": ".layers",
    "project_qkv": ".layers",
    "sinusoidal_positions": ".layers",
    "xavier_std": ".layers",
    # masks
    "causal_mask": ".masks",
    "mask_to_additive": ".masks",
    "padding_mask": ".masks",
    # presets
    "PRESETS": ".presets",
    "WalkthroughInputs": ".presets",
    "build_inputs": ".presets",
    "random_example": ".presets",
    "sentence_example": ".presets",
    "tiny_example": ".presets",
    # scaling
    "DEFAULT_LR": ".scaling",
    "SCALE_RULES": ".scaling",
    "RowSample": ".scaling",
    "dot_product_histograms": ".scaling",
    "dot_products": ".scaling",
    "gradient_table": ".scaling",
    "histogram_table": ".scaling",
    "init_effects": ".scaling",
    "naive_softmax": ".scaling",
    "named_init_stds": ".scaling",
    "overflow_limit": ".scaling",
    "overflow_logits": ".scaling",
    "overflow_sweep": ".scaling",
    "row_entropy": ".scaling",
    "sample_row": ".scaling",
    "saturation_table": ".scaling",
    "scaling_strategies": ".scaling",
    "softmax_jacobian": ".scaling",
    "softmax_overflow": ".scaling",
    "temperature_sweep": ".scaling",
    "train_toy": ".scaling",
    "training_summary": ".scaling",
    "variance_table": ".scaling",
    # tiled
    "tiled_attention": ".tiled",
    "tiled_extra_bytes": ".tiled",
    # walkthrough
    "MASK_KINDS": ".walkthrough",
    "STEP_NAMES": ".walkthrough",
    "WalkthroughResult": ".walkthrough",
    "build_mask": ".walkthrough",
    "run_walkthrough": ".walkthrough",
    "top_sources": ".walkthrough",
    "torch_snippet": ".walkthrough",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
