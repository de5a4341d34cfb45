"""Attention masks as tiny pure functions, on ``device=`` or torch's default device.

Convention (the same as ``torch.nn.functional.scaled_dot_product_attention``): a boolean mask
holds ``True`` where a query **may attend** to a key; a float mask is **added** to the scores.
Boolean masks combine with ``&``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .device import new_tensor_device
from .validation import check_int, check_ints, holds_data

_MAX_SIDE = 1 << 20  # a guard against typos that would allocate terabytes


def causal_mask(n_q: int, n_k: int, device: str | torch.device | None = None) -> torch.Tensor:
    """Query ``i`` may attend to keys ``0..i`` (aligned top-left, as torch's ``is_causal``): bool ``(n_q, n_k)``."""
    n_q, n_k = check_ints(n_q=n_q, n_k=n_k, low=1, high=_MAX_SIDE)
    return torch.ones(n_q, n_k, dtype=torch.bool, device=new_tensor_device(device)).tril()  # (n_q, n_k)


def padding_mask(
    lengths: Sequence[int] | torch.Tensor, n_k: int, device: str | torch.device | None = None
) -> torch.Tensor:
    """Key ``j`` of batch item ``b`` is real when ``j < lengths[b]``; the rest is padding.

    Returns bool ``(B, 1, n_k)``, broadcasting over the queries of ``(B, n_q, n_k)`` scores (a length of 0 masks
    every key: zero weights), on ``device``, else that of a ``lengths`` tensor, else torch's default device.
    """
    n_k = check_int("n_k", n_k, low=1, high=_MAX_SIDE)
    if isinstance(lengths, torch.Tensor):
        if lengths.dim() != 1 or not lengths.numel() or lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
            raise ValueError(
                f"lengths must be a non-empty 1-D integer tensor, got {lengths.dtype} of shape {tuple(lengths.shape)}"
            )
        device = lengths.device if device is None else device  # a function that takes a tensor computes on its device
        if holds_data(lengths):  # checked as a list's values; a fake or meta tensor has none to read
            lengths = lengths.tolist()
    if not isinstance(lengths, torch.Tensor):
        if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence) or len(lengths) == 0:
            raise ValueError(f"lengths must be a non-empty sequence of integers, got {lengths!r}")
        lens = [check_int(f"lengths[{i}]", n, low=0, high=n_k) for i, n in enumerate(lengths)]
        lengths = torch.tensor(lens, device="cpu")  # (B,): made on the CPU, then moved
    dev = new_tensor_device(device)
    return (torch.arange(n_k, device=dev) < lengths.to(dev).unsqueeze(-1)).unsqueeze(1)  # (B, 1, n_k)
