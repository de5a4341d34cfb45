"""The implementations the benchmark can run (:data:`IMPLEMENTATIONS`), each with a name, a
sentence, a memory model (:mod:`.memory_models`) and the reason it cannot run somewhere.

Every entry computes softmax(Q Kᵀ/√d) V for inputs of shape ``(B, H, n, d)``, except the efficient
routes of :mod:`.routes` (``exact=False``), which approximate it and say by how much. A forced SDPA kernel
(``sdpa-math``, ``-flash``, ``-efficient``, ``-cudnn``, through ``torch.nn.attention.sdpa_kernel``)
can fail but never falls back. With fewer K/V heads than query heads (``kv_heads``: GQA, or MQA at 1)
the SDPA entries pass ``enable_gqa=True`` and torch shares each K/V head itself; the others repeat K
and V to every query head inside the timed call (as Llama's reference code does), and their memory
models count the copies.

Each configuration also names the pass timed, its mode (:mod:`.passes` makes the call): ``fwd`` the
forward, ``bwd`` the backward on its own, ``fwd+bwd`` both, one training step of attention. FLOPs are
counted as FlashAttention's, Triton's and xformers' benchmarks count them: the forward's two matmuls
(QKᵀ and P·V, 2·n²·d each per head), the backward's five (dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K,
dK = dSᵀ·Q, and QKᵀ again, recomputed by FlashAttention's backward): 2.5× the forward, 3.5× for
both, all halved under the causal mask.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ..attention import attention_trace
from ..device import resolve_device
from ..heads import check_head_counts, repeat_kv
from ..textbook import _textbook_attention
from ..tiled import CUDA_MAX_BLOCK, DEFAULT_BLOCK_SIZE, pick_block_size, tiled_attention
from ..tiled_triton import DTYPES as TRITON_DTYPES
from ..tiled_triton import interpreting, tiled_triton_attention, triton_available
from ..validation import check_choice, check_int
from .memory_models import (
    autograd_guess_bytes,
    explained_extra_bytes,
    explained_training_bytes,
    fused_extra_bytes,
    fused_training_bytes,
    math_extra_bytes,
    math_training_bytes,
    naive_extra_bytes,
    naive_training_bytes,
    numpy_extra_bytes,
    tiled_config_bytes,
    tiled_training_bytes,
    triton_config_bytes,
)

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}
MAX_N = 1 << 20
MODES = ("fwd", "bwd", "fwd+bwd")
MODE_NAMES = {"fwd": "forward", "bwd": "backward", "fwd+bwd": "forward + backward"}
MATMULS = {"fwd": 2, "bwd": 5, "fwd+bwd": 7}  # n×n×d matmuls per head, each 2·n²·d FLOPs


def flop_formula(mode: str) -> str:
    """The FLOPs a call of ``mode`` counts, as a formula: "4·B·H·n²·d" for the forward (halved when causal)."""
    return f"{2 * MATMULS[check_choice('mode', mode, MODES)]}·B·H·n²·d"


@dataclass(frozen=True)
class BenchConfig:
    """One measurement: an implementation on ``(batch, heads, n, d)`` inputs, self-attention (L = S = n).

    ``kv_heads`` (default: ``heads``) is the number of K/V heads: fewer than ``heads`` and dividing
    it gives grouped-query attention (1: multi-query), K and V of shape ``(batch, kv_heads, n, d)``.
    ``mode`` is the pass timed: ``"fwd"``, ``"bwd"`` or ``"fwd+bwd"``.
    """

    impl: str
    n: int
    d: int = 64
    heads: int = 8
    batch: int = 1
    dtype: str = "float32"
    causal: bool = False
    device: str = "cpu"
    kv_heads: int | None = None
    mode: str = "fwd"

    def __post_init__(self) -> None:
        check_int("n", self.n, low=1, high=MAX_N)
        check_int("d", self.d, low=1, high=1024)
        check_int("heads", self.heads, low=1, high=1024)
        object.__setattr__(self, "kv_heads", check_head_counts(self.heads, self.kv_heads)[1])
        check_int("batch", self.batch, low=1, high=1 << 16)
        check_choice("dtype", self.dtype, DTYPES)
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be True or False, got {self.causal!r}")
        object.__setattr__(self, "device", str(resolve_device(self.device)))
        check_choice("mode", self.mode, MODES)

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def itemsize(self) -> int:
        return self.torch_dtype.itemsize

    @property
    def batch_heads(self) -> int:
        return self.batch * self.heads

    @property
    def grouped(self) -> bool:
        """Fewer K/V heads than query heads (GQA or MQA)."""
        return self.kv_heads != self.heads

    @property
    def backward(self) -> bool:
        """The mode runs the backward pass."""
        return self.mode != "fwd"

    def input_bytes(self) -> int:
        """q, k and v together (k and v with ``kv_heads`` heads), and the upstream gradient dO when the
        mode runs the backward."""
        tensors = self.heads + 2 * self.kv_heads + (self.heads if self.backward else 0)
        return tensors * self.batch * self.n * self.d * self.itemsize

    def flops(self) -> int:
        """2·n²·d per matmul per head: 4·B·H·n²·d forward, 10 backward, 14 both; halved under the causal mask."""
        total = MATMULS[self.mode] * 2 * self.batch_heads * self.n * self.n * self.d
        return total // 2 if self.causal else total


Inputs = tuple[Any, Any, Any]


@dataclass(frozen=True)
class Impl:
    """An entry of the registry.

    ``run(inputs, causal)`` is the timed call; ``prepare`` turns torch ``q, k, v`` into
    what ``run`` takes (numpy arrays for ``numpy``), outside the timing. ``not_here``
    gives the reason the entry cannot run on a device and dtype, or ``None``;
    ``backend`` names what actually ran; ``extra_bytes`` predicts the peak memory a
    forward call needs beyond its inputs (output included).

    The backward: ``run`` must be differentiable by autograd (its own ``autograd.Function`` or torch
    ops) unless ``no_backward`` says, in a sentence, why the entry has none; its ``bwd`` and
    ``fwd+bwd`` rows are then ``n/a`` with that sentence. ``training_bytes`` predicts the peak of
    those modes (:mod:`.memory_models`); an entry with a backward but no model gets a rough guess
    (:func:`.memory_models.autograd_guess_bytes`).
    """

    name: str
    description: str
    run: Callable[[Inputs, bool], Any]
    extra_bytes: Callable[[BenchConfig], int]
    backend: Callable[[Inputs, bool], str]
    prepare: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Inputs] = lambda q, k, v: (q, k, v)
    to_tensor: Callable[[Any], torch.Tensor] = lambda out: out
    not_here: Callable[[torch.device, torch.dtype], str | None] = lambda device, dtype: None
    forced: bool = False  # a forced kernel: an error on the first call means "cannot run here"
    exact: bool = True  # False: a route that approximates softmax attention (.routes): its error is said, not judged
    no_backward: str | None = None  # why there is no backward pass; None: it has one (its own or autograd's)
    training_bytes: Callable[[BenchConfig], int] | None = None  # the peak in the bwd and fwd+bwd modes

    def predicted_bytes(self, config: BenchConfig) -> int:
        """The memory model for the config's mode: bytes beyond the inputs (and dO) at the peak."""
        if not config.backward or self.no_backward:
            return self.extra_bytes(config)
        if self.training_bytes is None:
            return autograd_guess_bytes(config, self.extra_bytes)
        return self.training_bytes(config)

    def guard_bytes(self, config: BenchConfig) -> int:
        """What the memory guard holds against the cap: the inputs (and dO) and the peak beyond them. In
        ``bwd`` mode that is the peak of forward and backward together: what the forward keeps is in
        memory before the timed backward starts."""
        whole = replace(config, mode="fwd+bwd") if config.mode == "bwd" else config
        return config.input_bytes() + self.predicted_bytes(whole)

    def cannot_run(self, config: BenchConfig) -> str | None:
        """Why the config cannot run at all (device, dtype, or a backward this entry does not have), or None."""
        reason = self.not_here(torch.device(config.device), config.torch_dtype)
        if reason is None and config.backward and self.no_backward:
            return f"no backward pass: {self.no_backward}"
        return reason


def _tiled_label(inputs: Inputs, causal: bool) -> str:
    q, k, _v = inputs
    block = pick_block_size(
        q.device, q.shape[-2], k.shape[-2], batch_heads=math.prod(q.shape[:-2]), itemsize=q.element_size()
    )
    return f"tiled, block {block}" + _gqa_note(inputs)


# ---- the entries --------------------------------------------------------------------------


def _shared_kv(inputs: Inputs) -> Inputs:
    q, k, v = inputs
    h = q.shape[-3]
    return q, repeat_kv(k, h), repeat_kv(v, h)  # (B, H, n, d) each


def _gqa_note(inputs: Inputs) -> str:
    q, k, _ = inputs
    return f", K/V heads repeated {q.shape[-3] // k.shape[-3]}×" if k.shape[-3] != q.shape[-3] else ""


def _run_naive(inputs: Inputs, causal: bool) -> torch.Tensor:
    q, k, v = _shared_kv(inputs)
    return _textbook_attention(q, k, v, None, causal, 1.0 / math.sqrt(q.shape[-1]))


def _run_explained(inputs: Inputs, causal: bool) -> torch.Tensor:
    q, k, v = _shared_kv(inputs)
    return attention_trace(q, k, v, is_causal=causal).output


def _run_tiled(inputs: Inputs, causal: bool) -> torch.Tensor:
    q, k, v = _shared_kv(inputs)
    return tiled_attention(q, k, v, is_causal=causal)


_BACKEND_NAMES = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
}


def _sdpa_runner(backend: SDPBackend | None) -> Callable[[Inputs, bool], torch.Tensor]:
    def run(inputs: Inputs, causal: bool) -> torch.Tensor:
        q, k, v = inputs
        gqa = k.shape[-3] != q.shape[-3]  # torch shares each K/V head itself (or the kernel refuses)
        with contextlib.nullcontext() if backend is None else sdpa_kernel(backend):  # forced: never a fallback
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    return run


def sdpa_choice(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> str:
    """The kernel torch's dispatcher picks for these inputs ("flash", "math", …)."""
    try:
        gqa = k.shape[-3] != q.shape[-3]
        index = torch._fused_sdp_choice(q, k, v, None, 0.0, causal, enable_gqa=gqa)  # the dispatcher's own choice
    except (AttributeError, RuntimeError, TypeError):
        return "unknown"
    for backend, name in _BACKEND_NAMES.items():
        if int(backend.value) == int(index):
            return _kernel_label(name, q.device)
    return "unknown"


def _kernel_label(name: str, device: torch.device) -> str:
    return f"{name} (CPU kernel)" if device.type == "cpu" and name == "flash" else name


def _cuda_only(what: str) -> Callable[[torch.device, torch.dtype], str | None]:
    def not_here(device: torch.device, dtype: torch.dtype) -> str | None:
        if device.type != "cuda":
            return f"torch has the {what} kernel only for CUDA GPUs; this device is the {device.type.upper()}"
        return None

    return not_here


def _sdpa_entry(name: str, backend: SDPBackend | None, description: str) -> Impl:
    def label(inputs: Inputs, causal: bool) -> str:
        if backend is None:
            return sdpa_choice(*inputs, causal)
        return _kernel_label(_BACKEND_NAMES[backend], inputs[0].device)

    if backend is None:
        extra = _sdpa_default(math_extra_bytes, fused_extra_bytes)
        training = _sdpa_default(math_training_bytes, fused_training_bytes)
    elif backend == SDPBackend.MATH:
        extra, training = math_extra_bytes, math_training_bytes
    else:
        extra, training = fused_extra_bytes, fused_training_bytes
    not_here = {
        SDPBackend.EFFICIENT_ATTENTION: _cuda_only("memory-efficient"),
        SDPBackend.CUDNN_ATTENTION: _cuda_only("cuDNN"),
    }.get(backend, lambda device, dtype: None)
    return Impl(name, description, _sdpa_runner(backend), extra, label, not_here=not_here, forced=backend is not None,
                training_bytes=training)  # fmt: skip


Model = Callable[[BenchConfig], int]


def _sdpa_default(math: Model, fused: Model) -> Model:
    """The model of what the default dispatch would use: the math path's if torch picks math."""

    def model(c: BenchConfig) -> int:
        dev = torch.device(c.device)
        probe = torch.empty((1, c.heads, 1, c.d), dtype=c.torch_dtype, device=dev, requires_grad=c.backward)
        kv = torch.empty((1, c.kv_heads, 1, c.d), dtype=c.torch_dtype, device=dev, requires_grad=c.backward)
        return (math if sdpa_choice(probe, kv, kv, c.causal) == "math" else fused)(c)

    return model


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


def _to_numpy(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Inputs:
    return (q.numpy(), k.numpy(), v.numpy())


IMPLEMENTATIONS: dict[str, Impl] = {
    "naive": Impl(
        "naive",
        "The textbook code in plain torch: softmax(q @ kᵀ · scale) @ v, one n×n matrix and its softmax.",
        _run_naive,
        naive_extra_bytes,
        lambda inputs, causal: "torch ops (textbook)" + _gqa_note(inputs),
        training_bytes=naive_training_bytes,
    ),
    "explained": Impl(
        "explained",
        "The walkthrough's traced path: it checks every n×n step for NaN and overflow and keeps "
        "every intermediate (scores, scaled, masked, weights), so it is slower than naive.",
        _run_explained,
        explained_extra_bytes,
        lambda inputs, causal: "attention_core.attention_trace" + _gqa_note(inputs),
        training_bytes=explained_training_bytes,
    ),
    "sdpa": _sdpa_entry("sdpa", None, "torch's fused scaled_dot_product_attention; torch picks the kernel."),
    "sdpa-math": _sdpa_entry("sdpa-math", SDPBackend.MATH, "torch SDPA forced to its math kernel (n×n scores)."),
    "sdpa-flash": _sdpa_entry(
        "sdpa-flash", SDPBackend.FLASH_ATTENTION, "torch SDPA forced to its FlashAttention kernel."
    ),
    "sdpa-efficient": _sdpa_entry(
        "sdpa-efficient", SDPBackend.EFFICIENT_ATTENTION, "torch SDPA forced to its memory-efficient kernel."
    ),
    "sdpa-cudnn": _sdpa_entry("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION, "torch SDPA forced to its cuDNN kernel."),
    "tiled": Impl(
        "tiled",
        f"Online softmax in plain torch, in tiles ({DEFAULT_BLOCK_SIZE} on the CPU, up to {CUDA_MAX_BLOCK} on a "
        "GPU): memory grows as n, not n².",
        _run_tiled,
        tiled_config_bytes,
        _tiled_label,
        training_bytes=tiled_training_bytes,
    ),
    "numpy": Impl(
        "numpy",
        "What people write first: numpy on the CPU, scores then softmax then the weighted sum.",
        _run_numpy,
        numpy_extra_bytes,
        lambda inputs, causal: f"numpy {np.__version__}" + _gqa_note(inputs),
        prepare=_to_numpy,
        to_tensor=torch.from_numpy,
        not_here=_numpy_not_here,
        no_backward="numpy has no autograd, so there are no gradients to time",
    ),
    "tiled-triton": Impl(
        "tiled-triton",
        "The tiled recurrence as one Triton kernel: tiles stay on chip, nothing n×n reaches GPU memory. "
        "CUDA only; no boolean or float masks.",
        lambda inputs, causal: tiled_triton_attention(*_shared_kv(inputs), is_causal=causal),
        triton_config_bytes,
        lambda inputs, causal: triton_config_label() + _gqa_note(inputs),
        not_here=lambda device, dtype: triton_available(device) or _triton_dtype_reason(dtype),
        no_backward="the Triton kernel computes the forward only (it has no backward kernel yet)",
    ),
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
    """The registry entry called ``name``; ValueError names the known ones otherwise."""
    check_choice("impl", name, IMPLEMENTATIONS)
    return IMPLEMENTATIONS[name]


def make_inputs(config: BenchConfig, *, n: int | None = None, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Random ``q (B, H, n, d)``, ``k, v (B, kv_heads, n, d)`` on the config's device and dtype (``n`` overrides)."""
    side = config.n if n is None else check_int("n", n, low=1, high=MAX_N)
    gen = torch.Generator().manual_seed(seed)
    shapes = [(config.batch, h, side, config.d) for h in (config.heads, config.kv_heads, config.kv_heads)]
    # Drawn on the CPU in float32 so every device and dtype sees the same numbers.
    return tuple(torch.randn(s, generator=gen).to(device=config.device, dtype=config.torch_dtype) for s in shapes)


# The efficient routes (Beyond n²) join the registry; their module builds on Impl and the helpers above.
from .routes import ROUTE_IMPLEMENTATIONS  # noqa: E402

IMPLEMENTATIONS |= ROUTE_IMPLEMENTATIONS
EXACT = tuple(name for name, impl in IMPLEMENTATIONS.items() if impl.exact)  # the entries FlashAttention's rule judges
