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
    # accuracy
    "AccuracyCheck": ".accuracy",
    "flash_rule": ".accuracy",
    "standard_attention": ".accuracy",
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
    # bert
    "Bert": ".bert",
    "EncoderOutput": ".bert",
    "HeadReading": ".bert",
    "LayerAttention": ".bert",
    "PairReading": ".bert",
    "bert_forward": ".bert",
    "coreference_pair": ".bert",
    "encode": ".bert",
    "entropy_share": ".bert",
    "head_projections": ".bert",
    "load_bert": ".bert",
    "sentence_weights": ".bert",
    "sink_shares": ".bert",
    "strongest_links": ".bert",
    "strongest_links_all": ".bert",
    "token_attention": ".bert",
    # device
    "DeviceInfo": ".device",
    "available_devices": ".device",
    "default_device": ".device",
    "device_info": ".device",
    "new_tensor_device": ".device",
    "resolve_device": ".device",
    # heads
    "MultiHeadTrace": ".heads",
    "attention_parameters": ".heads",
    "check_head_counts": ".heads",
    "kv_head_of": ".heads",
    "mean_pool_kv": ".heads",
    "merge_heads": ".heads",
    "multi_head_attention": ".heads",
    "multi_head_trace": ".heads",
    "repeat_kv": ".heads",
    "split_heads": ".heads",
    # kv_cache
    "DECODE_CONTEXTS": ".kv_cache",
    "MODEL_SHAPES": ".kv_cache",
    "DecodeRun": ".kv_cache",
    "DecodeTiming": ".kv_cache",
    "ModelShape": ".kv_cache",
    "decode_step": ".kv_cache",
    "decode_with_cache": ".kv_cache",
    "kv_cache_bytes": ".kv_cache",
    "max_context_that_fits": ".kv_cache",
    "time_decode_steps": ".kv_cache",
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
    # tiled_triton
    "tiled_triton_attention": ".tiled_triton",
    "tiled_triton_extra_bytes": ".tiled_triton",
    "triton_available": ".tiled_triton",
    "triton_kernel_sources": ".tiled_triton",
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
