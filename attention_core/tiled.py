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

import torch

from .attention import check_attention_args
from .validation import check_int

DEFAULT_BLOCK_SIZE = 256  # the fastest of 128…1024 on a 2-core CPU at n = 4096, d = 64


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
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
        block_size: rows of queries and columns of keys per tile.

    Returns ``(N, ..., L, Ev)`` in the dtype of ``q``. Float16 and bfloat16 inputs keep
    their running max, sum and output in float32, as FlashAttention does. Forward only:
    inputs that require gradients (with grad mode on) raise ``ValueError``.
    """
    s, p = check_attention_args(q, k, v, attn_mask, dropout_p, is_causal, scale)
    if p > 0.0:
        raise ValueError(f"tiled_attention does not implement dropout; dropout_p must be 0, got {p}")
    block = check_int("block_size", block_size, low=1, high=1 << 16)

    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise ValueError(
            "tiled_attention is forward-only (it updates its running sums in place); call it under "
            "torch.no_grad(), or use scaled_dot_product_attention when gradients are needed"
        )

    L, S, Ev = q.shape[-2], k.shape[-2], v.shape[-1]
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
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
    block_size: int = DEFAULT_BLOCK_SIZE,
    d_k: int | None = None,
) -> int:
    """Predicted peak memory of :func:`tiled_attention` beyond its inputs, in bytes.

    The output ``(L, Ev)`` plus, for one query block: the scaled queries, the score
    tile (and for 16-bit inputs its float32 copy and the copy back for the second
    matmul), the tile's product with V, and the accumulator and its normalised copy.
    Grows as ``n·block``, never ``n²``.
    """
    n_q = check_int("n_q", n_q, low=1)
    n_k = check_int("n_k", n_k, low=1)
    d_v = check_int("d_v", d_v, low=1)
    itemsize = check_int("itemsize", itemsize, low=1, high=8)
    batch_heads = check_int("batch_heads", batch_heads, low=1)
    block = check_int("block_size", block_size, low=1)
    d_k = d_v if d_k is None else check_int("d_k", d_k, low=1)
    acc = max(itemsize, 4)
    bq, bk = min(block, n_q), min(block, n_k)
    output = n_q * d_v * itemsize
    per_block = (
        bq * d_k * itemsize  # q_blk
        + bq * bk * (itemsize + (acc + itemsize if acc != itemsize else 0))  # the tile (16-bit: up and back)
        + bq * d_v * (itemsize + 2 * acc)  # tile @ v, the accumulator o and o / l
    )
    return batch_heads * (output + per_block)
