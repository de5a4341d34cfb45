"""The call each mode times: the forward, the backward alone, or both.

``bwd`` times the backward alone, as FlashAttention's and Triton's benchmarks do: the forward runs once, outside
the timing, and each timed call runs autograd's backward again over its kept graph (``retain_graph=True``).
Gradients come from ``torch.autograd.grad`` on the benchmark's own leaves, so nothing accumulates in ``.grad``.
dO is random (:func:`grad_out`): all ones would make ``D = rowsum(dO ∘ O)`` a plain row sum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..validation import check_choice, check_int
from .config import MAX_N, MODES, BenchConfig
from .impls import get_impl, make_inputs

Run = Callable[[Any, bool], Any]  # an implementation's run(inputs, causal)


def leaves(inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """Fresh leaf tensors that require grad, sharing the inputs' memory."""
    return tuple(x.detach().requires_grad_(True) for x in inputs)


def grad_out(config: BenchConfig, *, n: int | None = None, seed: int = 2) -> torch.Tensor:
    """A random upstream gradient dO ``(B, H, n, d)``, the output's shape, on the config's device and dtype."""
    side = config.n if n is None else check_int("n", n, low=1, high=MAX_N)
    gen = torch.Generator().manual_seed(seed)
    d_out = torch.randn((config.batch, config.heads, side, config.d), generator=gen)  # (B, H, n, d)
    return d_out.to(device=config.device, dtype=config.torch_dtype)


def timed_pass(run: Run, inputs: Any, causal: bool, mode: str, d_out: torch.Tensor | None = None) -> Callable[[], Any]:
    """The call to time for ``mode``; for ``bwd`` the forward runs here, once, its graph kept by the call.
    ``inputs`` are :func:`leaves` in a mode with a backward. The call returns what it computed, so a peak counts it."""
    mode = check_choice("mode", mode, MODES)
    if mode == "fwd":
        return lambda: run(inputs, causal)
    if d_out is None:
        raise ValueError(f"mode {mode!r} needs the upstream gradient d_out")

    def forward_backward() -> tuple[torch.Tensor, ...]:
        with torch.enable_grad():
            return torch.autograd.grad(run(inputs, causal), inputs, d_out)

    if mode == "fwd+bwd":
        return forward_backward
    with torch.enable_grad():
        out = run(inputs, causal)  # the forward, outside the timed calls; its graph is kept for them
    return lambda: torch.autograd.grad(out, inputs, d_out, retain_graph=True)


def config_call(config: BenchConfig) -> tuple[Any, Callable[[], Any]]:
    """The config's inputs, prepared for its entry, and the call to time (:func:`timed_pass`)."""
    impl = get_impl(config.impl)
    inputs = impl.prepare(*make_inputs(config))
    if not config.backward:
        return inputs, timed_pass(impl.run, inputs, config.causal, config.mode)
    inputs = leaves(inputs)
    return inputs, timed_pass(impl.run, inputs, config.causal, config.mode, grad_out(config))
