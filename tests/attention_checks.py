"""Shared by the test_attention_* files: random inputs, random masks, and the float64 weights.

Every float64 answer comes from the core's :func:`attention_core.reference_attention`, which
tests/test_accuracy.py holds to torch's own SDPA in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from attention_core import reference_attention

NEG_INF = float("-inf")


def randn(gen: torch.Generator, *shape: int, device: torch.device | str = "cpu", scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=gen) * scale).to(device)


def make_mask(kind: str | None, shape: tuple[int, ...], gen: torch.Generator, device: torch.device | str):
    """A random bool or float mask whose first query row is fully masked (the zero-row case)."""
    if kind is None:
        return None
    blocked = torch.rand(shape, generator=gen) < 0.3
    blocked[..., 0, :] = True
    if kind == "bool":
        return (~blocked).to(device)
    values = torch.randn(shape, generator=gen)  # a float mask is added: any finite value, or −inf to block
    return values.masked_fill(blocked, NEG_INF).to(device)


def reference_weights(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None, **kw: Any) -> torch.Tensor:
    """The float64 weights ``(N, ..., L, S)``: attention with V = I returns the weights themselves."""
    eye = torch.eye(k.shape[-2], dtype=k.dtype, device=k.device)  # (S, S)
    return reference_attention(q, k, eye, mask, **kw)  # is_causal, scale as for the output


def max_err(x: torch.Tensor, ref: torch.Tensor | np.ndarray) -> float:
    return float((x.detach().cpu().double() - torch.as_tensor(ref).cpu().double()).abs().max())


def tile_cases(max_n: int, max_e: int, max_block: int) -> dict[str, st.SearchStrategy[Any]]:
    """Hypothesis arguments for the tiled kernel: sizes (n_q ≠ n_k allowed), widths, a block that need not
    divide n, causal or not, and a seed."""
    return {"n_q": st.integers(1, max_n), "n_k": st.integers(1, max_n), "e": st.integers(1, max_e),
            "ev": st.integers(1, max_e), "block": st.integers(1, max_block), "causal": st.booleans(),
            "seed": st.integers(0, 2**16)}  # fmt: skip
