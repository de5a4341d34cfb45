"""The implementations the benchmark can run (:data:`IMPLEMENTATIONS`), each computing softmax(Q Kᵀ/√d) V for
``(B, H, n, d)`` inputs, except the routes of :mod:`.routes`, which approximate it.

A forced SDPA kernel (``sdpa-math``, ``-flash``, ``-efficient``, ``-cudnn``) can fail but never falls back. With
fewer K/V heads than query heads (GQA, or MQA at 1) the SDPA entries pass ``enable_gqa=True``; the others repeat K
and V to every query head inside the timed call (as Llama's reference code does), and their memory models count it.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ..attention import attention_trace
from ..textbook import _textbook_attention
from ..tiled import CUDA_MAX_BLOCK, DEFAULT_BLOCK_SIZE, pick_block_size, tiled_attention
from ..tiled_triton import DTYPES as TRITON_DTYPES
from ..tiled_triton import interpreting, tiled_triton_attention, triton_available
from ..validation import check_choice, check_int
from .config import MAX_N, RENAMED, BenchConfig, Impl, Inputs, gqa_note, shared_kv
from .memory_models import (
    fused_extra_bytes,
    fused_training_bytes,
    math_extra_bytes,
    math_training_bytes,
    numpy_extra_bytes,
    textbook_extra_bytes,
    textbook_training_bytes,
    tiled_config_bytes,
    tiled_training_bytes,
    trace_extra_bytes,
    trace_training_bytes,
    triton_config_bytes,
)
from .routes import ROUTE_IMPLEMENTATIONS, parse_route, route_impl


def _tiled_label(inputs: Inputs, causal: bool) -> str:
    q, k, _v = inputs
    block = pick_block_size(
        q.device, q.shape[-2], k.shape[-2], batch_heads=math.prod(q.shape[:-2]), itemsize=q.element_size()
    )
    return f"tiled, block {block}" + gqa_note(inputs)


# ---- the entries --------------------------------------------------------------------------

# torch SDPA's kernels: the forced entry's name and label, and the kernel as its description names it
_KERNELS = {
    SDPBackend.MATH: ("math", "math kernel (n×n scores)"),
    SDPBackend.FLASH_ATTENTION: ("flash", "FlashAttention kernel"),
    SDPBackend.EFFICIENT_ATTENTION: ("efficient", "memory-efficient kernel"),
    SDPBackend.CUDNN_ATTENTION: ("cudnn", "cuDNN kernel"),
}


def sdpa_choice(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> str:
    """The kernel torch's dispatcher picks for these inputs ("flash", "math", …)."""
    try:
        gqa = k.shape[-3] != q.shape[-3]
        index = torch._fused_sdp_choice(q, k, v, None, 0.0, causal, enable_gqa=gqa)  # the dispatcher's own choice
    except (AttributeError, RuntimeError, TypeError):
        return "unknown"
    kernel = _KERNELS.get(SDPBackend(int(index)))
    return "unknown" if kernel is None else _kernel_label(kernel[0], q.device)


def _kernel_label(name: str, device: torch.device) -> str:
    return f"{name} (CPU kernel)" if device.type == "cpu" and name == "flash" else name


def _sdpa_entry(backend: SDPBackend | None, description: str) -> Impl:
    """``sdpa`` (``backend`` None: torch picks the kernel) or SDPA forced to one kernel, which never falls back."""

    def run(inputs: Inputs, causal: bool) -> torch.Tensor:
        q, k, v = inputs
        gqa = k.shape[-3] != q.shape[-3]  # torch shares each K/V head itself (or the kernel refuses)
        with contextlib.nullcontext() if backend is None else sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    def label(inputs: Inputs, causal: bool) -> str:
        if backend is None:
            return sdpa_choice(*inputs, causal)
        return _kernel_label(_KERNELS[backend][0], inputs[0].device)

    def not_here(device: torch.device, dtype: torch.dtype) -> str | None:
        if backend not in (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION) or device.type == "cuda":
            return None
        return f"torch has the {_KERNELS[backend][1]} only for CUDA GPUs; this device is the {device.type.upper()}"

    def uses_math(c: BenchConfig) -> bool:
        """Whether the math kernel runs: forced, or torch's pick for the config (probed on one-token tensors)."""
        if backend is not None:
            return backend == SDPBackend.MATH
        dev = torch.device(c.device)
        probe = torch.empty((1, c.heads, 1, c.d), dtype=c.torch_dtype, device=dev, requires_grad=c.backward)
        kv = torch.empty((1, c.kv_heads, 1, c.d), dtype=c.torch_dtype, device=dev, requires_grad=c.backward)
        return sdpa_choice(probe, kv, kv, c.causal) == "math"

    name = "sdpa" if backend is None else f"sdpa-{_KERNELS[backend][0]}"
    return Impl(name, description, run, lambda c: (math_extra_bytes if uses_math(c) else fused_extra_bytes)(c), label,
                not_here=not_here, forced=backend is not None,
                training_bytes=lambda c: (math_training_bytes if uses_math(c) else fused_training_bytes)(c))


def _run_numpy(inputs: Inputs, causal: bool) -> np.ndarray:
    """softmax(q kᵀ/√d) v as the tutorials write it in numpy, for ``(..., n, d)`` arrays."""
    q, k, v = inputs
    if k.ndim >= 3 and k.shape[-3] != q.shape[-3]:  # GQA: each K/V head repeated for its query heads
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)  # (..., H, n, d)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])  # (..., n, n)
    if causal:
        blocked = np.triu(np.ones(scores.shape[-2:], dtype=bool), k=1)  # (n, n), True above the diagonal
        scores = np.where(blocked, -np.inf, scores)
    scores -= scores.max(axis=-1, keepdims=True)  # so exp never overflows
    weights = np.exp(scores)  # (..., n, n)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v  # (..., n, n) @ (..., n, d) -> (..., n, d)


def _numpy_not_here(device: torch.device, dtype: torch.dtype) -> str | None:
    if device.type != "cpu":
        return "numpy computes on the CPU only"
    if dtype == torch.bfloat16:
        return "numpy has no bfloat16 type"
    return None


IMPLEMENTATIONS: dict[str, Impl] = {
    "textbook": Impl(
        "textbook",
        "The textbook code in plain torch: softmax(q @ kᵀ · scale) @ v, one n×n matrix and its softmax.",
        lambda inputs, c: _textbook_attention(*shared_kv(inputs), None, c, 1 / math.sqrt(inputs[0].shape[-1])),
        textbook_extra_bytes,
        lambda inputs, causal: "torch ops (textbook)" + gqa_note(inputs),
        training_bytes=textbook_training_bytes,
    ),
    "trace": Impl(
        "trace",
        "The walkthrough's traced path: it checks every n×n step for NaN and overflow and keeps "
        "every intermediate (scores, scaled, masked, weights), so it is slower than textbook.",
        lambda inputs, causal: attention_trace(*shared_kv(inputs), is_causal=causal).output,
        trace_extra_bytes,
        lambda inputs, causal: "attention_core.attention_trace" + gqa_note(inputs),
        training_bytes=trace_training_bytes,
    ),
    "sdpa": _sdpa_entry(None, "torch's fused scaled_dot_product_attention; torch picks the kernel."),
    **{f"sdpa-{name}": _sdpa_entry(backend, f"torch SDPA forced to its {kernel}.")
       for backend, (name, kernel) in _KERNELS.items()},
    "tiled": Impl(
        "tiled",
        f"Online softmax in plain torch, in tiles ({DEFAULT_BLOCK_SIZE} on the CPU, up to {CUDA_MAX_BLOCK} on a "
        "GPU): memory grows as n, not n².",
        lambda inputs, causal: tiled_attention(*shared_kv(inputs), is_causal=causal),
        tiled_config_bytes,
        _tiled_label,
        training_bytes=tiled_training_bytes,
    ),
    "numpy": Impl(
        "numpy",
        "What people write first: numpy on the CPU, scores then softmax then the weighted sum.",
        _run_numpy,
        numpy_extra_bytes,
        lambda inputs, causal: f"numpy {np.__version__}" + gqa_note(inputs),
        prepare=lambda q, k, v: (q.numpy(), k.numpy(), v.numpy()),
        not_here=_numpy_not_here,
        no_backward="numpy has no autograd, so there are no gradients to time",
    ),
    "tiled-triton": Impl(
        "tiled-triton",
        "The tiled recurrence as one Triton kernel: tiles stay on chip, nothing n×n reaches GPU memory. "
        "CUDA only; no boolean or float masks.",
        lambda inputs, causal: tiled_triton_attention(*shared_kv(inputs), is_causal=causal),
        triton_config_bytes,
        lambda inputs, causal: triton_config_label() + gqa_note(inputs),
        not_here=lambda device, dtype: triton_available(device) or _triton_dtype_reason(dtype),
        no_backward="the Triton kernel computes the forward only (it has no backward kernel yet)",
    ),
    **ROUTE_IMPLEMENTATIONS,  # the efficient routes (Beyond n²), which approximate attention
}


def _triton_dtype_reason(dtype: torch.dtype) -> str | None:
    if dtype in TRITON_DTYPES:
        return None
    return f"the Triton kernel takes float16, bfloat16 or float32, not {str(dtype).removeprefix('torch.')}"


def triton_config_label() -> str:
    """The tile sizes the autotuner chose at the kernel's last launch (Triton is imported by then)."""
    from ..tiled_triton_kernel import attention_forward_kernel

    c = attention_forward_kernel.best_config
    tiles = f"{c.kwargs['BLOCK_M']}×{c.kwargs['BLOCK_N']} tiles"
    if interpreting():
        return f"triton interpreter (CPU), {tiles}"
    return f"triton, {tiles}, {c.num_warps} warps, {c.num_stages} stages (autotuned)"


def get_impl(name: str) -> Impl:
    """The registry entry called ``name``, or a route with its knob (``"performer(64)"``, :mod:`.routes`);
    ValueError names the known ones otherwise."""
    name = RENAMED.get(name, name)
    if name in IMPLEMENTATIONS:
        return IMPLEMENTATIONS[name]
    route = parse_route(name)
    if route is None:
        check_choice("impl", name, IMPLEMENTATIONS)
    return route_impl(*route)


def make_inputs(config: BenchConfig, *, n: int | None = None, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Random ``q (B, H, n, d)``, ``k, v (B, kv_heads, n, d)`` on the config's device and dtype (``n`` overrides)."""
    side = config.n if n is None else check_int("n", n, low=1, high=MAX_N)
    gen = torch.Generator().manual_seed(seed)
    shapes = [(config.batch, h, side, config.d) for h in (config.heads, config.kv_heads, config.kv_heads)]
    # Drawn on the CPU in float32 so every device and dtype sees the same numbers.
    return tuple(torch.randn(s, generator=gen).to(device=config.device, dtype=config.torch_dtype) for s in shapes)


EXACT = tuple(name for name, impl in IMPLEMENTATIONS.items() if impl.exact)  # the entries FlashAttention's rule judges
