"""Attention in tiles with an online softmax: the FlashAttention recurrence in plain torch.

The explained path builds the whole ``L × S`` score matrix. This one never does. It
walks the queries in blocks of ``block_size`` rows and, for each block, the keys in
blocks of ``block_size`` columns, keeping three running quantities per query row:

    m  the largest score seen so far                          (..., Bq, 1)
    l  the sum of exp(score − m) over the keys seen so far      (..., Bq, 1)
    o  the sum of exp(score − m) · v over the keys seen so far  (..., Bq, Ev)

When a new key block raises the maximum from ``m`` to ``m'``, everything gathered so
far was weighted by ``exp(· − m)`` and must be weighted by ``exp(· − m')`` instead, so
``l`` and ``o`` are multiplied by ``exp(m − m')`` before the new block is added. After
the last key block, ``o / l`` is exactly softmax(scores) · V. Extra memory is one
``Bq × Bk`` score tile plus the ``Bq × Ev`` accumulator, not ``L × S``.

With ``is_causal`` (top-left aligned, as torch's) key blocks that lie wholly above the
diagonal are never computed. A query row whose keys are all masked ends with ``l = 0``
and gives zeros, as the explained path and torch's fused kernels do.
"""

from __future__ import annotations

import math

import torch

from .attention import check_attention_args
from .validation import broadcast_shapes, check_int

DEFAULT_BLOCK_SIZE = 256  # the CPU's block: the fastest of 128…1024 on a 2-core CPU at n = 4096, d = 64

# On a GPU every tile costs a dozen kernel launches of a few microseconds each, whatever its size, so
# small tiles leave the GPU idle between launches. Measured on an H100 (torch 2.11, CUDA 13) at
# n = 16384, fp16, 16 heads, d = 64: torch's SDPA takes 2.25 ms; this loop takes 669 ms with blocks of
# 256 (4096 tiles, about 50,000 launches) and 66–81 ms with blocks of 1024–8192. So on CUDA the block
# is as large as a bounded tile allows: the loop stays one readable recurrence, with tens of tiles.
# What it cannot reach is the fused kernel: each tile's scores still go out to GPU memory and back,
# which a fused kernel keeps on chip (a separate issue writes that kernel).
CUDA_MAX_BLOCK = 4096
CUDA_MIN_BLOCK = 512
CUDA_TILE_BUDGET_BYTES = 1 << 30  # one tile's scores (and their float32 copies) over every batch and head


def _tile_bytes_per_score(itemsize: int) -> int:
    """Bytes per entry of a score tile: the tile, plus for 16-bit inputs its float32 copy and the copy back."""
    acc = max(itemsize, 4)
    return itemsize + (acc + itemsize if acc != itemsize else 0)


def pick_block_size(
    device: str | torch.device, n_q: int, n_k: int, *, batch_heads: int = 1, itemsize: int = 4
) -> int:
    """The tile side the kernel uses on ``device``: 256 on the CPU; on CUDA the largest power of two
    from 4096 down to 512 whose tile (over ``batch_heads``) fits in 1 GiB."""
    n_q = check_int("n_q", n_q, low=1)
    n_k = check_int("n_k", n_k, low=1)
    batch_heads = check_int("batch_heads", batch_heads, low=1)
    itemsize = check_int("itemsize", itemsize, low=1, high=8)
    if torch.device(device).type != "cuda":
        return DEFAULT_BLOCK_SIZE
    per_score = _tile_bytes_per_score(itemsize)
    block = CUDA_MAX_BLOCK
    def tile_bytes(side: int) -> int:
        return batch_heads * min(side, n_q) * min(side, n_k) * per_score

    while block > CUDA_MIN_BLOCK and tile_bytes(block) > CUDA_TILE_BUDGET_BYTES:
        block //= 2
    return block


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    block_size: int | None = None,
) -> torch.Tensor:
    """softmax(Q Kᵀ · scale + mask) V without materialising the ``L × S`` scores.

    Args:
        q: ``(N, ..., L, E)`` queries.
        k: ``(N, ..., S, E)`` keys.
        v: ``(N, ..., S, Ev)`` values.
        attn_mask: bool (``True`` = may attend) or float (added), broadcastable to ``(N, ..., L, S)``.
        dropout_p: must be 0; the tiled kernel does not implement dropout.
        is_causal: query ``i`` sees keys ``0..i`` (top-left aligned); blocks above the diagonal are skipped.
        scale: multiplier of the scores, default ``1/√E``.
        block_size: rows of queries and columns of keys per tile; ``None`` picks it for the inputs'
            device (:func:`pick_block_size`: 256 on the CPU, up to 4096 on a GPU).

    Returns ``(N, ..., L, Ev)`` in the dtype of ``q``. Float16 and bfloat16 inputs keep
    their running max, sum and output in float32, as FlashAttention does. Forward only:
    inputs that require gradients (with grad mode on) raise ``ValueError``.
    """
    s, p = check_attention_args(q, k, v, attn_mask, dropout_p, is_causal, scale)
    if p > 0.0:
        raise ValueError(f"tiled_attention does not implement dropout; dropout_p must be 0, got {p}")

    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise ValueError(
            "tiled_attention is forward-only (it updates its running sums in place); call it under "
            "torch.no_grad(), or use scaled_dot_product_attention when gradients are needed"
        )

    L, S, Ev = q.shape[-2], k.shape[-2], v.shape[-1]
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if block_size is None:
        block_size = pick_block_size(q.device, L, S, batch_heads=math.prod(lead), itemsize=q.dtype.itemsize)
    block = check_int("block_size", block_size, low=1, high=1 << 16)
    acc_dtype = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    mask = _full_size(attn_mask, L, S)
    out = torch.empty((*lead, L, Ev), dtype=q.dtype, device=q.device)  # (N, ..., L, Ev)
    kt = k.transpose(-2, -1)  # (N, ..., E, S), a view
    # Two buffers reused by every tile: allocating 2 MiB per tile costs more than the arithmetic around it.
    bq, bk = min(block, L), min(block, S)
    scores = torch.empty((*lead, bq, bk), dtype=q.dtype, device=q.device)  # (N, ..., Bq, Bk)
    pv = torch.empty((*lead, bq, Ev), dtype=v.dtype, device=q.device)  # (N, ..., Bq, Ev)

    for i0 in range(0, L, block):
        i1 = min(i0 + block, L)
        q_blk = q[..., i0:i1, :] * s  # (N, ..., Bq, E); scaling q is cheaper than scaling the tile
        m = torch.full((*lead, i1 - i0, 1), float("-inf"), dtype=acc_dtype, device=q.device)  # (N, ..., Bq, 1)
        l_sum = torch.zeros_like(m)  # (N, ..., Bq, 1)
        o = torch.zeros((*lead, i1 - i0, Ev), dtype=acc_dtype, device=q.device)  # (N, ..., Bq, Ev)

        last_key = min(S, i1) if is_causal else S  # causal: row i1−1 sees keys up to i1−1 only
        for j0 in range(0, last_key, block):
            j1 = min(j0 + block, S)
            tile = torch.matmul(q_blk, kt[..., j0:j1], out=scores[..., : i1 - i0, : j1 - j0])  # (N, ..., Bq, Bk)
            tile = tile.to(acc_dtype)  # a float32 copy for 16-bit inputs, else the same tensor
            if is_causal and j1 - 1 > i0:  # the tile crosses the diagonal
                rows = torch.arange(i0, i1, device=q.device).unsqueeze(-1)  # (Bq, 1)
                cols = torch.arange(j0, j1, device=q.device)  # (Bk,)
                tile.masked_fill_(cols > rows, float("-inf"))  # (N, ..., Bq, Bk)
            elif mask is not None:
                block_mask = mask[..., i0:i1, j0:j1]  # (..., Bq, Bk), broadcasts
                if block_mask.dtype == torch.bool:
                    tile.masked_fill_(~block_mask, float("-inf"))
                else:
                    tile += block_mask

            m_new = torch.maximum(m, tile.amax(dim=-1, keepdim=True))  # (N, ..., Bq, 1)
            # Under a mask, a row with no allowed key so far keeps m' = −inf: subtract 0, so exp gives 0,
            # not NaN. Without one, every row has an allowed key in the first tile (key 0, even when causal).
            shift = m_new if mask is None else torch.where(torch.isneginf(m_new), 0.0, m_new)  # (N, ..., Bq, 1)
            tile.sub_(shift).exp_()  # tile is now exp(score − m'), each entry in [0, 1]
            rescale = (m - shift).exp_()  # exp(m − m') ∈ [0, 1]: re-weights what was gathered so far
            l_sum.mul_(rescale).add_(tile.sum(dim=-1, keepdim=True))  # (N, ..., Bq, 1)
            tile_v = torch.matmul(tile.to(v.dtype), v[..., j0:j1, :], out=pv[..., : i1 - i0, :])  # (N, ..., Bq, Ev)
            o.mul_(rescale).add_(tile_v)
            m = m_new

        # l = 0 only when every key of the row was masked: the row's output is 0.
        done = torch.where(l_sum > 0, o / l_sum.clamp_min(torch.finfo(acc_dtype).tiny), 0.0)  # (N, ..., Bq, Ev)
        out[..., i0:i1, :] = done
    return out


def _full_size(mask: torch.Tensor | None, n_q: int, n_k: int) -> torch.Tensor | None:
    """The mask as a view of shape ``(..., L, S)``, so a tile can be sliced from it.

    A size-1 query or key axis (e.g. a padding mask ``(N, 1, 1, S)``) is expanded
    without copying; slicing rows ``i0:i1`` of a size-1 axis would give nothing.
    """
    if mask is None:
        return None
    while mask.dim() < 2:
        mask = mask.unsqueeze(0)
    return mask.expand(*mask.shape[:-2], n_q, n_k)  # (..., L, S), a view


def tiled_extra_bytes(
    n_q: int,
    n_k: int,
    d_v: int,
    *,
    itemsize: int,
    batch_heads: int = 1,
    block_size: int | None = None,
    d_k: int | None = None,
    device: str | torch.device = "cpu",
) -> int:
    """Predicted peak memory of :func:`tiled_attention` beyond its inputs, in bytes.

    The output ``(L, Ev)`` plus, for one query block: the scaled queries, the score
    tile (and for 16-bit inputs its float32 copy and the copy back for the second
    matmul), the tile's product with V, and the accumulator and its normalised copy.
    Grows as ``n·block``, never ``n²``. ``block_size=None`` uses the block the kernel picks
    on ``device`` (:func:`pick_block_size`).
    """
    n_q = check_int("n_q", n_q, low=1)
    n_k = check_int("n_k", n_k, low=1)
    d_v = check_int("d_v", d_v, low=1)
    itemsize = check_int("itemsize", itemsize, low=1, high=8)
    batch_heads = check_int("batch_heads", batch_heads, low=1)
    if block_size is None:
        block_size = pick_block_size(device, n_q, n_k, batch_heads=batch_heads, itemsize=itemsize)
    block = check_int("block_size", block_size, low=1)
    d_k = d_v if d_k is None else check_int("d_k", d_k, low=1)
    acc = max(itemsize, 4)
    bq, bk = min(block, n_q), min(block, n_k)
    output = n_q * d_v * itemsize
    per_block = (
        bq * d_k * itemsize  # q_blk
        + bq * bk * _tile_bytes_per_score(itemsize)  # the tile (16-bit: up to float32 and back)
        + bq * d_v * (itemsize + 2 * acc)  # tile @ v, the accumulator o and o / l
    )
    return batch_heads * (output + per_block)
