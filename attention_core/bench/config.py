"""The benchmark's shared words: one measurement (:class:`BenchConfig`), an entry of the registry (:class:`Impl`),
the dtypes and modes. A leaf: every other module of the package imports it, and it imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import torch

from ..device import resolve_device
from ..heads import check_head_counts, repeat_kv
from ..validation import check_bool, check_choice, check_int, check_ints

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}
MAX_N = 1 << 20
# Older names of registry entries, still accepted (in links, scripts and CSVs): the entry's name today.
RENAMED = {"naive": "textbook", "explained": "trace"}
MODES = ("fwd", "bwd", "fwd+bwd")
MODE_NAMES = {"fwd": "forward", "bwd": "backward", "fwd+bwd": "forward + backward"}
# n×n×d matmuls per head, each 2·n²·d FLOPs, counted as FlashAttention's, Triton's and xformers' benchmarks count
# them: the forward's QKᵀ and P·V; the backward's dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q and QKᵀ again
# (FlashAttention's backward recomputes it).
MATMULS = {"fwd": 2, "bwd": 5, "fwd+bwd": 7}


def flop_formula(mode: str) -> str:
    """The FLOPs a call of ``mode`` counts, as a formula: "4·B·H·n²·d" for the forward (halved when causal)."""
    return f"{2 * MATMULS[check_choice('mode', mode, MODES)]}·B·H·n²·d"


@dataclass(frozen=True, kw_only=True)
class Shape:
    """What a measurement runs on beside its implementation and n, shared by a sweep's configurations: ``(batch,
    heads, n, d)`` queries, self-attention; K and V ``(batch, kv_heads, n, d)``, ``kv_heads`` (default ``heads``)
    dividing ``heads`` (GQA; 1: MQA). ``mode`` is the pass timed; ``device`` may be ``"auto"``.
    """

    d: int = 64
    heads: int = 8
    batch: int = 1
    dtype: str = "float32"
    causal: bool = False
    device: str = "cpu"
    kv_heads: int | None = None
    mode: str = "fwd"

    def __post_init__(self) -> None:
        check_ints(d=self.d, heads=self.heads, low=1, high=1024)
        object.__setattr__(self, "kv_heads", check_head_counts(self.heads, self.kv_heads)[1])
        check_int("batch", self.batch, low=1, high=1 << 16)
        check_choice("dtype", self.dtype, DTYPES)
        check_bool("causal", self.causal)
        object.__setattr__(self, "device", str(resolve_device(self.device)))
        check_choice("mode", self.mode, MODES)

    def shape(self) -> dict[str, Any]:
        """The shape's fields, to pass on: ``BenchConfig(impl, n, **spec.shape())``."""
        return {f.name: getattr(self, f.name) for f in fields(Shape)}


@dataclass(frozen=True)
class BenchConfig(Shape):
    """One measurement: the implementation ``impl`` at ``n`` tokens, on its :class:`Shape` (keywords)."""

    impl: str
    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "impl", RENAMED.get(self.impl, self.impl))
        check_int("n", self.n, low=1, high=MAX_N)
        super().__post_init__()

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
        """Bytes of q, k and v (k and v with ``kv_heads`` heads), and of the upstream gradient dO in a backward mode."""
        tensors = self.heads + 2 * self.kv_heads + (self.heads if self.backward else 0)
        return tensors * self.batch * self.n * self.d * self.itemsize

    def flops(self) -> int:
        """2·n²·d per matmul per head: 4·B·H·n²·d forward, 10 backward, 14 both; halved under the causal mask."""
        total = MATMULS[self.mode] * 2 * self.batch_heads * self.n * self.n * self.d
        return total // 2 if self.causal else total


Inputs = tuple[Any, Any, Any]


@dataclass(frozen=True)
class Impl:
    """An entry of the registry: ``run(inputs, causal)`` is the timed call, on what ``prepare`` made of torch
    ``q, k, v`` outside the timing; ``backend`` names what actually ran; ``extra_bytes`` predicts the forward's peak
    beyond its inputs (output included). ``run`` is differentiable by autograd unless ``no_backward`` says why not.
    """

    name: str
    description: str
    run: Callable[[Inputs, bool], Any]
    extra_bytes: Callable[[BenchConfig], int]
    backend: Callable[[Inputs, bool], str]
    prepare: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Inputs] = lambda q, k, v: (q, k, v)
    not_here: Callable[[torch.device, torch.dtype], str | None] = lambda device, dtype: None  # why not, or None
    forced: bool = False  # a forced kernel: an error on the first call means "cannot run here"
    exact: bool = True  # False: a route that approximates softmax attention (.routes): its error is said, not judged
    no_backward: str | None = None  # why there is no backward pass; None: it has one (its own or autograd's)
    training_bytes: Callable[[BenchConfig], int] | None = None  # the peak in the bwd and fwd+bwd modes, if modelled

    def predicted_bytes(self, config: BenchConfig) -> int:
        """The memory model for the config's mode: bytes beyond the inputs (and dO) at the peak."""
        if not config.backward or self.no_backward:
            return self.extra_bytes(config)
        if self.training_bytes is None:
            # no model: autograd keeps all the forward made, the backward needs as much again, dQ, dK, dV
            return 2 * self.extra_bytes(config) + config.input_bytes()
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


def shared_kv(inputs: Inputs) -> Inputs:
    """K and V repeated to every query head, for an entry that cannot share them."""
    q, k, v = inputs
    h = q.shape[-3]
    return q, repeat_kv(k, h), repeat_kv(v, h)  # (B, H, n, d) each


def gqa_note(inputs: Inputs) -> str:
    """The backend label's tail when K/V heads are repeated."""
    q, k, _ = inputs
    return f", K/V heads repeated {q.shape[-3] // k.shape[-3]}×" if k.shape[-3] != q.shape[-3] else ""
