"""The online-softmax recurrence of ``tiled.py`` as one Triton kernel (forward pass).

Read it beside :mod:`attention_core.tiled`: the loops and the names are the same. What changes is
where the work happens: ``tiled.py`` launches a few torch kernels per tile and keeps each score tile
in GPU memory (HBM). Here one launch runs every tile: each program instance owns ``BLOCK_M`` query
rows of one (batch, head), keeps its running ``m_i``, ``l_i`` and ``acc`` in registers, and streams
``BLOCK_N`` keys and values at a time through on-chip memory (SRAM); only the ``(L, Ev)`` output is
written to HBM.

Two liberties, both exact in real arithmetic: ``exp2`` instead of ``exp`` (exp(x) = 2^(x·log2 e), so
``log2 e`` is folded into the scale once and ``m_i`` kept in base-2 units; exp2 is the GPU's native
instruction), and the scale multiplies the float32 score tile, so 16-bit queries are not rounded twice.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# The configurations the autotuner tries: a handful, not a grid of hundreds. The winners are a guess, NOT yet
# measured on a GPU (benchmarks/triton_report.py prints the autotuner's choice: write it here with its margin):
# on an H100, float16, BLOCK_M 128, BLOCK_N 64, 3 stages, 4 warps at d = 64 and 8 at d = 128. Checked without
# one: every config compiles for sm_90 and fits 227 KiB of shared memory at d ≤ 128, with cp.async and wgmma.
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 32}, num_warps=4, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=2),
]
# What the interpreter (TRITON_INTERPRET=1, the CPU tests) runs: one small config, no tuning.
INTERPRETER_CONFIG = triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=1, num_stages=1)


def prune_configs(configs: list[triton.Config], named_args: dict, **kwargs: object) -> list[triton.Config]:
    """Drop tiles much taller than the input; under the interpreter, run one small config. float32 keeps only
    64-row tiles: its exact dot products skip the tensor cores, so big tiles buy nothing and at d = 128 take
    minutes to compile (110 s for 128×64 against 14 s for 64×64, on a busy 2-core CPU)."""
    if triton.knobs.runtime.interpret:
        return [INTERPRETER_CONFIG]
    n_q = named_args["n_q"]
    kept = [c for c in configs if c.kwargs["BLOCK_M"] <= max(64, triton.next_power_of_2(n_q))]
    if named_args["q_ptr"].dtype == torch.float32:
        kept = [c for c in kept if c.kwargs["BLOCK_M"] == 64]
    return kept or configs


# The autotuner times every config at the first call of each shape and keeps the fastest,
# keyed on (n_q, n_k, d, causal) and, added by Triton itself, the dtypes of the tensors.
# EVEN_N, set for the config chosen: the keys fill whole tiles, so no tile needs its columns masked.
@triton.autotune(
    configs=CONFIGS,
    key=["n_q", "n_k", "HEAD_DIM", "IS_CAUSAL"],
    prune_configs_by={"early_config_prune": prune_configs},
)
@triton.heuristics({"EVEN_N": lambda args: args["n_k"] % args["BLOCK_N"] == 0})
@triton.jit
def attention_forward_kernel(
    q_ptr, k_ptr, v_ptr, out_ptr,  # (BH, L, E), (BH, S, E), (BH, S, Ev), (BH, L, Ev)
    stride_qb, stride_qm, stride_qd,
    stride_kb, stride_kn, stride_kd,
    stride_vb, stride_vn, stride_vd,
    stride_ob, stride_om, stride_od,
    n_q, n_k,  # L and S
    qk_scale,  # scale · log2(e): scaled scores come out in base-2 units, ready for exp2
    HEAD_DIM: tl.constexpr,  # E, a power of two in 16…128
    HEAD_DIM_V: tl.constexpr,  # Ev, likewise
    IS_CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,  # "ieee" for float32 inputs (no TF32); 16-bit inputs ignore it
    BLOCK_M: tl.constexpr,  # query rows per program   (tiled.py: block_size, the i0:i1 rows)
    BLOCK_N: tl.constexpr,  # keys per step of the loop (tiled.py: block_size, the j0:j1 columns)
    EVEN_N: tl.constexpr,  # S is a multiple of BLOCK_N
):
    # One program = one query block of one (batch, head). tiled.py's outer loop `for i0 in …`
    # is the grid's first axis: the blocks run in parallel, not one after another.
    # Causal: the last query blocks have the most keys; start them first so no SM idles at the end.
    num_m_blocks = tl.cdiv(n_q, BLOCK_M)
    block_m = (num_m_blocks - 1 - tl.program_id(0)) if IS_CAUSAL else tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)  # 64-bit offsets: B·H·n·d can pass 2³¹ elements
    i0 = block_m * BLOCK_M

    offs_m = i0 + tl.arange(0, BLOCK_M)  # the query rows i0 … i1−1 of this block  (BLOCK_M,)
    offs_n = tl.arange(0, BLOCK_N)  # key columns within a tile  (BLOCK_N,)
    offs_d = tl.arange(0, HEAD_DIM)  # (E,)
    offs_dv = tl.arange(0, HEAD_DIM_V)  # (Ev,)
    row_ok = offs_m < n_q  # the last query block may hang past L: those rows are padding

    # q_blk = q[..., i0:i1, :], loaded once and kept on chip for the whole loop.
    q_ptrs = q_ptr + bh * stride_qb + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd
    q_blk = tl.load(q_ptrs, mask=row_ok[:, None], other=0.0)  # (BLOCK_M, E)
    # kᵀ and v pointers for the first key tile; each step moves them BLOCK_N keys on.
    kt_ptrs = k_ptr + bh * stride_kb + offs_n[None, :] * stride_kn + offs_d[:, None] * stride_kd  # (E, BLOCK_N)
    v_ptrs = v_ptr + bh * stride_vb + offs_n[:, None] * stride_vn + offs_dv[None, :] * stride_vd  # (BLOCK_N, Ev)

    # The running quantities of tiled.py, in float32 whatever the input dtype:
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)  # m: the largest score so far (base 2)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)  # l: Σ 2^(score − m) over the keys so far
    acc = tl.zeros([BLOCK_M, HEAD_DIM_V], dtype=tl.float32)  # o: Σ 2^(score − m) · v so far

    # tiled.py: last_key = min(S, i1) if is_causal else S. Key tiles wholly above the
    # diagonal are never loaded: the causal kernel does about half the work.
    last_key = tl.minimum(n_k, i0 + BLOCK_M) if IS_CAUSAL else n_k
    for j0 in range(0, last_key, BLOCK_N):
        cols = j0 + offs_n  # the key columns j0 … j1−1  (BLOCK_N,)
        col_ok = cols < n_k  # the last key tile may hang past S
        kt = tl.load(kt_ptrs, mask=col_ok[None, :], other=0.0)  # (E, BLOCK_N)
        v_tile = tl.load(v_ptrs, mask=col_ok[:, None], other=0.0)  # (BLOCK_N, Ev); padding rows are 0, not garbage

        # tile = q_blk @ kᵀ: in registers, never written out. The scale is applied below, inside
        # the exponent, where it fuses with the subtraction of m' into one multiply-add.
        tile = tl.dot(q_blk, kt, input_precision=DOT_PRECISION)  # (BLOCK_M, BLOCK_N), float32
        if IS_CAUSAL:  # tiled.py: tile.masked_fill_(cols > rows, -inf)
            allowed = (cols[None, :] <= offs_m[:, None]) & col_ok[None, :]  # (BLOCK_M, BLOCK_N)
            tile = tl.where(allowed, tile, float("-inf"))
        elif not EVEN_N:  # only keys past S are masked
            tile = tl.where(col_ok[None, :], tile, float("-inf"))

        # m' = max(m, rowmax(tile) · scale), the scale > 0. Every row sees key 0 in the first tile
        # (even when causal), so m' is finite from the first step on and no −inf − (−inf) appears.
        m_new = tl.maximum(m_i, tl.max(tile, axis=1) * qk_scale)  # (BLOCK_M,)
        p = tl.math.exp2(tile * qk_scale - m_new[:, None])  # exp(score − m'), each in [0, 1]  (BLOCK_M, BLOCK_N)
        alpha = tl.math.exp2(m_i - m_new)  # exp(m − m'): re-weights what was gathered so far  (BLOCK_M,)
        l_i = l_i * alpha + tl.sum(p, axis=1)  # l ← l·exp(m − m') + Σ p  (BLOCK_M,)
        # o ← o·exp(m − m') + p @ v; p is rounded to v's dtype first (tiled.py keeps it in float32),
        # so the second matmul runs on the tensor cores too.
        acc = acc * alpha[:, None]  # (BLOCK_M, Ev)
        acc = tl.dot(p.to(v_tile.dtype), v_tile, acc, input_precision=DOT_PRECISION)  # (BLOCK_M, Ev)
        m_i = m_new

        kt_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn

    # out[..., i0:i1, :] = o / l. l ≥ 1 here: the row's largest score contributes 2⁰ = 1.
    done = acc / l_i[:, None]  # (BLOCK_M, Ev)
    out_ptrs = out_ptr + bh * stride_ob + offs_m[:, None] * stride_om + offs_dv[None, :] * stride_od
    tl.store(out_ptrs, done.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
