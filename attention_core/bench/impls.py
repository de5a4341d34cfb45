"""The implementations the benchmark can run, each with a name, a sentence and a memory model.

Every entry computes softmax(Q Kᵀ/√d) V for inputs of shape ``(B, H, n, d)``:

- ``naive``: the explained path of this project, which keeps every ``n × n`` step;
- ``sdpa``: torch's fused ``scaled_dot_product_attention``, letting torch pick the kernel;
- ``sdpa-math`` / ``-flash`` / ``-efficient`` / ``-cudnn``: the same call with one kernel
  forced by ``torch.nn.attention.sdpa_kernel``, so it can fail but never fall back;
- ``tiled``: :func:`attention_core.tiled.tiled_attention`, the online softmax in plain torch;
- ``numpy``: the version tutorials write first, on the CPU;
- ``tiled-triton``: :func:`attention_core.tiled_triton.tiled_triton_attention`, the same
  recurrence as one Triton kernel, on CUDA GPUs only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ..attention import scaled_dot_product_attention
from ..device import resolve_device
from ..tiled import CUDA_MAX_BLOCK, DEFAULT_BLOCK_SIZE, pick_block_size, tiled_attention, tiled_extra_bytes
from ..tiled_triton import DTYPES as TRITON_DTYPES
from ..tiled_triton import interpreting, tiled_triton_attention, tiled_triton_extra_bytes, triton_available
from ..validation import check_choice, check_int

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}
MAX_N = 1 << 20


@dataclass(frozen=True)
class BenchConfig:
    """One measurement: an implementation on ``(batch, heads, n, d)`` inputs, self-attention (L = S = n)."""

    impl: str
    n: int
    d: int = 64
    heads: int = 8
    batch: int = 1
    dtype: str = "float32"
    causal: bool = False
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_int("n", self.n, low=1, high=MAX_N)
        check_int("d", self.d, low=1, high=1024)
        check_int("heads", self.heads, low=1, high=1024)
        check_int("batch", self.batch, low=1, high=1 << 16)
        check_choice("dtype", self.dtype, DTYPES)
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be True or False, got {self.causal!r}")
        object.__setattr__(self, "device", str(resolve_device(self.device)))

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def itemsize(self) -> int:
        return self.torch_dtype.itemsize

    @property
    def batch_heads(self) -> int:
        return self.batch * self.heads

    def input_bytes(self) -> int:
        """q, k and v together."""
        return 3 * self.batch_heads * self.n * self.d * self.itemsize

    def flops(self) -> int:
        """The two matmuls, 2·n²·d each per head: 4·B·H·n²·d, halved under the causal mask."""
        total = 4 * self.batch_heads * self.n * self.n * self.d
        return total // 2 if self.causal else total


Inputs = tuple[Any, Any, Any]


@dataclass(frozen=True)
class Impl:
    """An entry of the registry.

    ``run(inputs, causal)`` is the timed call; ``prepare`` turns torch ``q, k, v`` into
    what ``run`` takes (numpy arrays for ``numpy``), outside the timing. ``not_here``
    gives the reason the entry cannot run on a device and dtype, or ``None``;
    ``backend`` names what actually ran; ``extra_bytes`` predicts the peak memory a
    call needs beyond its inputs (output included).
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


# ---- memory models: bytes beyond the inputs at the peak of one call -------------------------


def _square(c: BenchConfig, itemsize: int | None = None) -> int:
    """One ``(B, H, n, n)`` tensor."""
    return c.batch_heads * c.n * c.n * (c.itemsize if itemsize is None else itemsize)


def _output(c: BenchConfig) -> int:
    return c.batch_heads * c.n * c.d * c.itemsize


def naive_extra_bytes(c: BenchConfig) -> int:
    """The explained path keeps scores, scaled and weights (and masked, under a mask) alive to
    the end, and its softmax briefly holds exp, the quotient, a zeros tensor and the result:
    six ``n × n`` tensors at the peak, seven plus the boolean mask when causal."""
    if c.causal:
        return 7 * _square(c) + 2 * c.n * c.n + _output(c)  # + the (n, n) bool mask and its inverse
    return 6 * _square(c) + _output(c)


def fused_extra_bytes(c: BenchConfig) -> int:
    """A fused kernel writes the output and a per-row log-sum-exp; its tiles are negligible."""
    return _output(c) + c.batch_heads * c.n * 4


def math_accumulation_itemsize(c: BenchConfig) -> int:
    """Bytes per element inside torch's math backend: float32 for 16-bit inputs, on every device,
    unless ``torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)`` keeps them 16-bit."""
    if c.itemsize >= 4:
        return c.itemsize
    allowed = getattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed", lambda: False)()
    return c.itemsize if allowed else 4


def math_extra_bytes(c: BenchConfig) -> int:
    """torch's math backend, as ``_scaled_dot_product_attention_math`` computes it in torch 2.11 to 2.13.

    It upcasts 16-bit q, k and v to float32 (three copies), scales q (and k, for the matmul),
    computes the scores, then ``_safe_softmax``: the softmax as a second n×n tensor plus a boolean
    n×n "is −inf" tensor, the fully masked rows zeroed in place. That is the peak: two n×n squares
    in the accumulation dtype and one of bools. Under the causal flag it also holds an additive
    (n, n) mask. Checked against the CUDA allocator on an H100 (fp16, n = 4096, 16 heads: 2.3 GiB,
    i.e. 2 float32 squares + 1 bool square) and against the peak RSS on the CPU.
    """
    acc = math_accumulation_itemsize(c)
    rows = c.batch_heads * c.n * c.d  # elements of one (B, H, n, d) tensor
    upcast = 3 * rows * acc if acc != c.itemsize else 0  # float32 copies of q, k, v
    scaled_qk = 2 * rows * acc  # q·√scale, and k·√scale (until the matmul ends)
    mask = c.n * c.n * acc if c.causal else 0  # the (n, n) additive causal mask
    return 2 * _square(c, acc) + _square(c, 1) + upcast + scaled_qk + mask


def numpy_extra_bytes(c: BenchConfig) -> int:
    """scores, scores − max and exp (the first freed as the third appears), then the division."""
    mask = c.n * c.n if c.causal else 0
    return 3 * _square(c) + mask + _output(c)


def tiled_config_bytes(c: BenchConfig) -> int:
    return tiled_extra_bytes(c.n, c.n, c.d, itemsize=c.itemsize, batch_heads=c.batch_heads, device=c.device)


def _tiled_label(inputs: Inputs, causal: bool) -> str:
    q, k, _v = inputs
    block = pick_block_size(
        q.device, q.shape[-2], k.shape[-2], batch_heads=math.prod(q.shape[:-2]), itemsize=q.element_size()
    )
    return f"tiled, block {block}"


# ---- the entries --------------------------------------------------------------------------


def _run_naive(inputs: Inputs, causal: bool) -> torch.Tensor:
    q, k, v = inputs
    return scaled_dot_product_attention(q, k, v, is_causal=causal)


def _run_tiled(inputs: Inputs, causal: bool) -> torch.Tensor:
    q, k, v = inputs
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
        if backend is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        with sdpa_kernel(backend):  # this kernel or an error: never a silent fallback
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return run


def sdpa_choice(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> str:
    """The kernel torch's dispatcher picks for these inputs ("flash", "math", …)."""
    try:
        index = torch._fused_sdp_choice(q, k, v, None, 0.0, causal)  # the dispatcher's own choice
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
        extra = _sdpa_default_extra
    else:
        extra = math_extra_bytes if backend == SDPBackend.MATH else fused_extra_bytes
    not_here = {
        SDPBackend.EFFICIENT_ATTENTION: _cuda_only("memory-efficient"),
        SDPBackend.CUDNN_ATTENTION: _cuda_only("cuDNN"),
    }.get(backend, lambda device, dtype: None)
    return Impl(name, description, _sdpa_runner(backend), extra, label, not_here=not_here, forced=backend is not None)


def _sdpa_default_extra(c: BenchConfig) -> int:
    """What the default dispatch would use: the math path's memory if torch picks math."""
    dev = torch.device(c.device)
    probe = torch.empty((1, 1, 1, c.d), dtype=c.torch_dtype, device=dev)
    if sdpa_choice(probe, probe, probe, c.causal) == "math":
        return math_extra_bytes(c)
    return fused_extra_bytes(c)


def numpy_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> np.ndarray:
    """softmax(q kᵀ/√d) v as the tutorials write it, for ``(..., n, d)`` arrays."""
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
        "The explained path of this app: every n×n step (scores, scaled, weights) is a full tensor.",
        _run_naive,
        naive_extra_bytes,
        lambda inputs, causal: "attention_core (explained path)",
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
    ),
    "numpy": Impl(
        "numpy",
        "What people write first: numpy on the CPU, scores then softmax then the weighted sum.",
        lambda inputs, causal: numpy_attention(*inputs, causal=causal),
        numpy_extra_bytes,
        lambda inputs, causal: f"numpy {np.__version__}",
        prepare=_to_numpy,
        to_tensor=torch.from_numpy,
        not_here=_numpy_not_here,
    ),
    "tiled-triton": Impl(
        "tiled-triton",
        "The tiled recurrence as one Triton kernel: tiles stay on chip, nothing n×n reaches GPU memory. "
        "CUDA only; no boolean or float masks.",
        lambda inputs, causal: tiled_triton_attention(*inputs, is_causal=causal),
        lambda c: tiled_triton_extra_bytes(c.n, c.d, itemsize=c.itemsize, batch_heads=c.batch_heads),
        lambda inputs, causal: triton_config_label(),
        not_here=lambda device, dtype: triton_available(device) or _triton_dtype_reason(dtype),
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
    """Random ``q, k, v`` of shape ``(B, H, n, d)`` on the config's device and dtype (``n`` overrides)."""
    side = config.n if n is None else check_int("n", n, low=1, high=MAX_N)
    gen = torch.Generator().manual_seed(seed)
    shape = (config.batch, config.heads, side, config.d)
    # Drawn on the CPU in float32 so every device and dtype sees the same numbers.
    return tuple(torch.randn(shape, generator=gen).to(device=config.device, dtype=config.torch_dtype) for _ in range(3))


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """The float64 answer every implementation is checked against (the explained path in float64)."""
    return scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
