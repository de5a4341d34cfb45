"""Attention in tiles with an online softmax: the FlashAttention recurrence in plain torch.

The explained path builds the whole ``L × S`` score matrix; this one walks the queries in blocks of
``block_size`` rows and, for each, the keys in blocks of ``block_size`` columns, keeping per query row:

    m  the largest score seen so far                          (..., Bq, 1)
    l  the sum of exp(score − m) over the keys seen so far      (..., Bq, 1)
    o  the sum of exp(score − m) · v over the keys seen so far  (..., Bq, Ev)

When a key block raises the maximum from ``m`` to ``m'``, ``l`` and ``o`` (weighted by ``exp(· − m)``) are
multiplied by ``exp(m − m')`` before the block is added; after the last, ``o / l`` is softmax(scores) · V.
Extra memory is one ``Bq × Bk`` tile and the ``Bq × Ev`` accumulator. With ``is_causal`` key blocks wholly
above the diagonal are skipped; a row whose keys are all masked ends with ``l = 0`` and gives zeros.

The backward (:class:`TiledAttentionFunction`) rebuilds the weights from each row's ``lse = m + log l``.
"""

from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

from .attention import check_attention_args, overflow_error
from .validation import all_finite, broadcast_shapes, check_int, check_ints, finite_flag, holds_data

DEFAULT_BLOCK_SIZE = 256  # the CPU's block: the fastest of 128…1024 on a 2-core CPU at n = 4096, d = 64

# On a GPU every tile costs a dozen kernel launches whatever its size, so the block is as large as a bounded
# tile allows. H100, n = 16384, fp16, 16 heads, d = 64 (before 16-bit tiles went float32): SDPA 2.25 ms; this
# loop 669 ms with blocks of 256, 66–81 ms with 1024–8192.
CUDA_MAX_BLOCK = 4096
CUDA_MIN_BLOCK = 512
CUDA_TILE_BUDGET_BYTES = 1 << 30  # one tile's scores (and their float32 copies) over every batch and head


def pick_block_size(
    device: str | torch.device, n_q: int, n_k: int, *, batch_heads: int = 1, itemsize: int = 4
) -> int:
    """The tile side the kernel uses on ``device``: 256 on the CPU; on CUDA the largest power of two
    from 4096 down to 512 whose tile (over ``batch_heads``) fits in 1 GiB."""
    n_q, n_k, batch_heads = check_ints(n_q=n_q, n_k=n_k, batch_heads=batch_heads, low=1)
    itemsize = check_int("itemsize", itemsize, low=1, high=8)
    if torch.device(device).type != "cuda":
        return DEFAULT_BLOCK_SIZE
    acc = max(itemsize, 4)  # a tile is held in the accumulators' dtype (float32 for 16-bit inputs)
    block = CUDA_MAX_BLOCK
    while block > CUDA_MIN_BLOCK and batch_heads * min(block, n_q) * min(block, n_k) * acc > CUDA_TILE_BUDGET_BYTES:
        block //= 2
    return block


def tiled_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False,
    *, scale: float | None = None, block_size: int | None = None, return_lse: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """softmax(Q Kᵀ · scale + mask) V without materialising the ``L × S`` scores, forward and backward.

    Arguments as :func:`.attention_trace` (q ``(N, ..., L, E)``, k ``(N, ..., S, E)``, v ``(N, ..., S, Ev)``),
    except: ``dropout_p`` must be 0, and ``attn_mask`` gets no gradient (one that requires grad raises).
    ``block_size`` is the tile's side (``None``: :func:`pick_block_size`). ``return_lse`` (forward only) also
    returns each row's log-sum-exp ``(N, ..., L)`` (``+inf`` on a fully masked row), as FlashAttention's
    ``return_softmax_lse``, with the output unrounded in the accumulators' dtype.

    Returns ``(N, ..., L, Ev)`` in ``q``'s dtype; 16-bit inputs are multiplied in float32 tile by tile and
    rounded once at the end, as FlashAttention does.
    """
    s, p = check_attention_args(q, k, v, attn_mask, dropout_p, is_causal, scale)
    if p > 0.0:
        raise ValueError(f"tiled_attention does not implement dropout; dropout_p must be 0, got {p}")
    L, S, Ev = q.shape[-2], k.shape[-2], v.shape[-1]
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if block_size is None:
        block_size = pick_block_size(
            q.device, max(L, 1), max(S, 1), batch_heads=max(math.prod(lead), 1), itemsize=q.dtype.itemsize
        )
    block = check_int("block_size", block_size, low=1, high=1 << 16)

    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        if return_lse:
            raise ValueError("return_lse is forward-only; call it under torch.no_grad()")
        if attn_mask is not None and attn_mask.requires_grad:
            raise ValueError(
                "tiled_attention gives no gradient for attn_mask (it would be L × S, what the tiles avoid); "
                "pass attn_mask.detach(), or use dot_product_attention"
            )
        return TiledAttentionFunction.apply(q, k, v, attn_mask, is_causal, s, block)  # runs this loop, no grad

    acc_dtype = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    mask = None if attn_mask is None else attn_mask.expand(*attn_mask.shape[:-2], L, S)  # (..., L, S), a view
    out_dtype = acc_dtype if return_lse else q.dtype  # the backward's rowsum(dO ∘ O) must not see 16-bit rounding
    out = torch.empty((*lead, L, Ev), dtype=out_dtype, device=q.device)  # (N, ..., L, Ev)
    lse = torch.empty((*lead, L), dtype=acc_dtype, device=q.device) if return_lse else None  # (N, ..., L)
    kt = k.transpose(-2, -1)  # (N, ..., E, S), a view
    # Two buffers reused by every tile (allocating 2 MiB per tile costs more than its arithmetic), in the
    # accumulators' dtype: a 16-bit input's scores and P·V are never rounded to 16 bits; only the output is.
    bq, bk = min(block, L), min(block, S)
    scores = torch.empty((*lead, bq, bk), dtype=acc_dtype, device=q.device)  # (N, ..., Bq, Bk)
    pv = torch.empty((*lead, bq, Ev), dtype=acc_dtype, device=q.device)  # (N, ..., Bq, Ev)

    finite = torch.ones((), dtype=torch.bool, device=q.device)  # every score finite so far; read once, at the end
    for i0 in range(0, L, block):
        i1 = min(i0 + block, L)
        q_blk = q[..., i0:i1, :].to(acc_dtype, copy=True).mul_(s)  # (N, ..., Bq, E); cheaper than scaling the tile
        m = torch.full((*lead, i1 - i0, 1), float("-inf"), dtype=acc_dtype, device=q.device)  # (N, ..., Bq, 1)
        l_sum = torch.zeros_like(m)  # (N, ..., Bq, 1)
        o = torch.zeros((*lead, i1 - i0, Ev), dtype=acc_dtype, device=q.device)  # (N, ..., Bq, Ev)

        last_key = min(S, i1) if is_causal else S  # causal: row i1−1 sees keys up to i1−1 only
        for j0 in range(0, last_key, block):
            j1 = min(j0 + block, S)
            k_blk = kt[..., j0:j1].to(acc_dtype)  # (N, ..., E, Bk): a float32 copy for 16-bit inputs, else a view
            tile = torch.matmul(q_blk, k_blk, out=scores[..., : i1 - i0, : j1 - j0])  # (N, ..., Bq, Bk)
            finite = finite & finite_flag(tile)  # an overflowed score must not pass for a masked one
            _mask_tile(tile, mask, is_causal, i0, i1, j0, j1)

            m_new = torch.maximum(m, tile.amax(dim=-1, keepdim=True))  # (N, ..., Bq, 1)
            # Under a mask, a row with no allowed key so far keeps m' = −inf: subtract 0, so exp gives 0,
            # not NaN. Without one, every row has an allowed key in the first tile (key 0, even when causal).
            shift = m_new if mask is None else torch.where(torch.isneginf(m_new), 0.0, m_new)  # (N, ..., Bq, 1)
            tile.sub_(shift).exp_()  # tile is now exp(score − m'), each entry in [0, 1]
            rescale = (m - shift).exp_()  # exp(m − m') ∈ [0, 1]: re-weights what was gathered so far
            l_sum.mul_(rescale).add_(tile.sum(dim=-1, keepdim=True))  # (N, ..., Bq, 1)
            v_blk = v[..., j0:j1, :].to(acc_dtype)  # (N, ..., Bk, Ev)
            tile_v = torch.matmul(tile, v_blk, out=pv[..., : i1 - i0, :])  # (N, ..., Bq, Ev)
            o.mul_(rescale).add_(tile_v)
            m = m_new

        # l = 0 only when every key of the row was masked: the row's output is 0. Otherwise l ≥ 1 (the
        # row's largest score contributes exp(0)), and a NaN from an overflow stays NaN, to be caught below.
        out[..., i0:i1, :] = torch.where(l_sum == 0, 0.0, o / l_sum)  # (N, ..., Bq, Ev)
        if lse is not None:  # log Σ exp(score) = m + log l; +inf on an empty row, so the backward's P is 0 there
            lse[..., i0:i1] = torch.where(l_sum > 0, m + l_sum.log(), float("inf")).squeeze(-1)  # (N, ..., Bq)
    if holds_data(out) and not (bool(finite) and all_finite(out)):
        raise overflow_error(acc_dtype)
    return out if lse is None else (out, lse)


def _mask_tile(
    tile: torch.Tensor, mask: torch.Tensor | None, is_causal: bool, i0: int, i1: int, j0: int, j1: int
) -> None:
    """Block, in place, the entries of the score tile (rows ``i0:i1``, keys ``j0:j1``) a query may not see."""
    if is_causal and j1 - 1 > i0:  # the tile crosses the diagonal
        rows = torch.arange(i0, i1, device=tile.device).unsqueeze(-1)  # (Bq, 1)
        cols = torch.arange(j0, j1, device=tile.device)  # (Bk,)
        tile.masked_fill_(cols > rows, float("-inf"))  # (N, ..., Bq, Bk)
    elif mask is not None:
        block_mask = mask[..., i0:i1, j0:j1]  # (..., Bq, Bk); mask expanded to (..., L, S): a size-1 axis slices empty
        if block_mask.dtype == torch.bool:
            tile.masked_fill_(block_mask.logical_not(), float("-inf"))
        else:
            tile += block_mask


class TiledAttentionFunction(torch.autograd.Function):
    """The tiled forward and FlashAttention-2's backward (Algorithm 2) as one autograd node.

    Forward saves ``q, k, v``, the output and each row's log-sum-exp ``lse`` (and the mask): O(L)
    numbers per head beyond the inputs. For 16-bit inputs the saved output is the float32 one: the
    backward's ``D = rowsum(dO ∘ O)`` nearly cancels ``dP``, so a rounded O (what FlashAttention-2
    keeps) can cost several times textbook attention's error in dK. Use it through :func:`tiled_attention`.
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
        attn_mask: torch.Tensor | None, is_causal: bool, scale: float, block: int,
    ) -> torch.Tensor:  # fmt: skip
        out, lse = tiled_attention(q, k, v, attn_mask, 0.0, is_causal, scale=scale, block_size=block, return_lse=True)
        ctx.save_for_backward(q, k, v, out, lse, attn_mask)  # out unrounded: float32 for 16-bit inputs
        ctx.is_causal, ctx.scale, ctx.block = is_causal, scale, block
        return out.to(q.dtype)  # for float32 and float64 the saved tensor itself

    @staticmethod
    @once_differentiable
    def backward(ctx: torch.autograd.function.FunctionCtx, d_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        q, k, v, out, lse, attn_mask = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, out, lse, d_out, attn_mask, ctx.is_causal, ctx.scale, ctx.block)
        return dq, dk, dv, None, None, None, None  # autograd drops a gradient that an input does not need


def _backward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor, d_out: torch.Tensor,
    attn_mask: torch.Tensor | None, is_causal: bool, s: float, block: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """dQ, dK, dV in the shapes and dtypes of ``q, k, v``: :mod:`.backward`'s steps tile by tile, the outer loop
    over key blocks, so dK and dV of a block are finished before the next; dQ gathers from every key block."""
    L, S, E, Ev = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    lead = out.shape[:-2]
    B = math.prod(lead)  # spelt out, not −1: a reshape cannot infer it when L or S is 0
    acc_dtype = lse.dtype  # float32 for 16-bit inputs, else the inputs' dtype

    def batches(x: torch.Tensor) -> torch.Tensor:
        """(N, ..., n, e) → (B, n, e) over the broadcast leading dims; copies only an input that broadcasts."""
        return x.expand(*lead, *x.shape[-2:]).reshape(B, *x.shape[-2:])

    # The scores are recomputed exactly as the forward computed them (q scaled in the accumulators' dtype,
    # float32 for 16-bit inputs), so exp(scores − lse) is the forward's P; every product runs in that dtype.
    q_s_acc = batches(q).to(acc_dtype, copy=True).mul_(s)  # (B, L, E)
    k_acc, v_acc = batches(k).to(acc_dtype), batches(v).to(acc_dtype)  # (B, S, E), (B, S, Ev)
    kt = k_acc.transpose(1, 2)  # (B, E, S), a view
    d_out = batches(d_out).to(acc_dtype)  # (B, L, Ev)
    delta = (d_out * batches(out).to(acc_dtype)).sum(dim=-1, keepdim=True)  # (B, L, 1): D = rowsum(dO ∘ O)
    lse = lse.reshape(B, L, 1)  # (B, L, 1)
    mask = None if attn_mask is None else attn_mask.expand(*attn_mask.shape[:-2], L, S)  # (..., L, S), a view
    dq = torch.zeros((B, L, E), dtype=acc_dtype, device=q.device)  # (B, L, E), times scale at the end
    dk = torch.empty((B, S, E), dtype=acc_dtype, device=q.device)  # (B, S, E)
    dv = torch.empty((B, S, Ev), dtype=acc_dtype, device=q.device)  # (B, S, Ev)
    # Buffers reused by every tile. The accumulators are contiguous: torch's CPU baddbmm_ into a
    # row slice of dq or dk falls back to one small matmul per batch, about 1.5× slower.
    bq, bk = min(block, L), min(block, S)
    scores = torch.empty((B, bq, bk), dtype=acc_dtype, device=q.device)  # (B, Bq, Bk)
    dp_buf = torch.empty((B, bq, bk), dtype=acc_dtype, device=q.device)  # (B, Bq, Bk)
    dq_buf = torch.empty((B, bq, E), dtype=acc_dtype, device=q.device)  # (B, Bq, E)

    for j0 in range(0, S, block):
        j1 = min(j0 + block, S)
        dk_j = torch.zeros((B, j1 - j0, E), dtype=acc_dtype, device=q.device)  # (B, Bk, E), over all query blocks
        dv_j = torch.zeros((B, j1 - j0, Ev), dtype=acc_dtype, device=q.device)  # (B, Bk, Ev)
        first_query = j0 if is_causal else 0  # causal: query blocks above key block j see none of its keys
        for i0 in range(first_query, L, block):
            i1 = min(i0 + block, L)
            p = torch.bmm(q_s_acc[:, i0:i1], kt[:, :, j0:j1], out=scores[:, : i1 - i0, : j1 - j0])  # (B, Bq, Bk)
            _mask_tile(p.view(*lead, i1 - i0, j1 - j0), mask, is_causal, i0, i1, j0, j1)
            p.sub_(lse[:, i0:i1]).exp_()  # P = exp(score − lse): the forward's weights, rebuilt; masked → 0

            dv_j.baddbmm_(p.transpose(1, 2), d_out[:, i0:i1])  # dV_j += Pᵀ dO_i  (B, Bk, Ev)
            dp = torch.bmm(d_out[:, i0:i1], v_acc[:, j0:j1].transpose(1, 2), out=dp_buf[:, : i1 - i0, : j1 - j0])
            ds = dp.sub_(delta[:, i0:i1]).mul_(p)  # dS = P ∘ (dP − D)  (B, Bq, Bk)
            dq[:, i0:i1].add_(torch.bmm(ds, k_acc[:, j0:j1], out=dq_buf[:, : i1 - i0]))  # dQ_i += dS K_j  (B, Bq, E)
            dk_j.baddbmm_(ds.transpose(1, 2), q_s_acc[:, i0:i1])  # dK_j += dSᵀ (Q_i · scale)  (B, Bk, E)
        dk[:, j0:j1], dv[:, j0:j1] = dk_j, dv_j

    dq.mul_(s)

    def back_to(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """(B, n, e) → x's shape and dtype: a broadcast input gets the sum over the dims it was broadcast on."""
        return grad.view(*lead, *grad.shape[-2:]).sum_to_size(x.shape).to(x.dtype)

    grads = back_to(dq, q), back_to(dk, k), back_to(dv, v)
    if holds_data(dq) and not all(all_finite(g) for g in grads):
        raise ValueError(f"a gradient of tiled_attention overflowed {q.dtype}; use a wider dtype or smaller inputs")
    return grads


def tiled_extra_bytes(
    n_q: int, n_k: int, d_v: int, *, itemsize: int, batch_heads: int = 1, block_size: int | None = None,
    d_k: int | None = None, device: str | torch.device = "cpu",
) -> int:  # fmt: skip
    """Predicted peak memory of :func:`tiled_attention` beyond its inputs, in bytes: the output ``(L, Ev)``
    plus one query block's buffers (below), in the accumulators' dtype. Grows as ``n·block``, never ``n²``.
    ``block_size=None`` uses the block the kernel picks on ``device`` (:func:`pick_block_size`).
    """
    n_q, n_k, d_v, batch_heads = check_ints(n_q=n_q, n_k=n_k, d_v=d_v, batch_heads=batch_heads, low=1)
    itemsize = check_int("itemsize", itemsize, low=1, high=8)
    if block_size is None:
        block_size = pick_block_size(device, n_q, n_k, batch_heads=batch_heads, itemsize=itemsize)
    block = check_int("block_size", block_size, low=1)
    d_k = d_v if d_k is None else check_int("d_k", d_k, low=1)
    acc = max(itemsize, 4)
    bq, bk = min(block, n_q), min(block, n_k)
    output = n_q * d_v * itemsize
    per_block = (
        bq * d_k * acc  # q_blk, scaled
        + (bk * (d_k + d_v) * acc if acc != itemsize else 0)  # 16-bit: the tile's keys and values in float32
        + bq * bk * acc  # the score tile
        + bq * d_v * 3 * acc  # tile @ v, the accumulator o and o / l
    )
    return batch_heads * (output + per_block)


def tiled_saved_bytes(n_q: int, d_v: int, *, itemsize: int, batch_heads: int = 1) -> int:
    """Bytes autograd keeps between :func:`tiled_attention`'s forward and backward beyond q, k, v: the output
    ``(L, Ev)`` and the log-sum-exp ``(L,)`` in the accumulators' dtype, O(L) where textbook keeps ``L × S``."""
    n_q, d_v, batch_heads = check_ints(n_q=n_q, d_v=d_v, batch_heads=batch_heads, low=1)
    itemsize = check_int("itemsize", itemsize, low=1, high=8)
    return batch_heads * n_q * (d_v + 1) * max(itemsize, 4)
