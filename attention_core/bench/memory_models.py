"""Memory models: the bytes each implementation needs beyond its inputs at the peak of one call, following its code
tensor by tensor, so that a measured peak (the CUDA allocator's, or a fresh worker's: :mod:`.isolated`) holds it to
account; the memory guard refuses a configuration from them before allocating.

``*_extra_bytes`` model the forward. ``*_training_bytes`` model ``fwd+bwd`` (what autograd keeps between the passes
plus what the backward needs on top, beyond q, k, v and dO) and ``bwd`` (only the second part: the rest was there).
"""

from __future__ import annotations

import math

import torch

from ..efficient.linear import DEFAULT_CHUNK
from ..efficient.patterns import FLEX_BLOCK
from ..tiled import pick_block_size, tiled_extra_bytes, tiled_saved_bytes
from ..tiled_triton import tiled_triton_extra_bytes
from .config import BenchConfig


def _square(c: BenchConfig, itemsize: int | None = None) -> int:
    """One ``(B, H, n, n)`` tensor."""
    return c.batch_heads * c.n * c.n * (c.itemsize if itemsize is None else itemsize)


def _rows(c: BenchConfig, itemsize: int | None = None) -> int:
    """One ``(B, H, n, d)`` tensor, the output's size."""
    return c.batch_heads * c.n * c.d * (c.itemsize if itemsize is None else itemsize)


def _repeated_kv(c: BenchConfig) -> int:
    """K and V repeated to every query head, for a path that cannot share them (0 without GQA)."""
    return 2 * _rows(c) if c.grouped else 0


def _kept_copies(c: BenchConfig, copies: int) -> int:
    """With GQA in fwd+bwd, the repeated K and V a path keeps at its backward's peak: the textbook graph holds K's
    copy (V's goes once W·V's backward has run), tiled's autograd node both. Measured in fresh processes (8 query,
    2 K/V heads)."""
    return copies * _rows(c) if c.grouped and c.mode == "fwd+bwd" else 0


def textbook_extra_bytes(c: BenchConfig) -> int:
    """The textbook code holds two ``n × n`` tensors at its peak: the raw scores while they are
    scaled, then the scaled scores (still named) and the weights while the output is written.
    Causal adds the ``(n, n)`` boolean mask, and its inverse while it is applied."""
    if c.causal:
        return 2 * _square(c) + max(2 * c.n * c.n, c.n * c.n + _rows(c)) + _repeated_kv(c)
    return 2 * _square(c) + _rows(c) + _repeated_kv(c)


def trace_extra_bytes(c: BenchConfig) -> int:
    """The traced path keeps scores, scaled and weights (and masked, under a mask) alive to
    the end, and its softmax briefly holds exp, the quotient, a zeros tensor and the result:
    six ``n × n`` tensors at the peak, seven plus the boolean mask when causal. (Its NaN and
    overflow scans make boolean ``n × n`` tensors too, but earlier, when less is alive.)"""
    if c.causal:
        return 7 * _square(c) + 2 * c.n * c.n + _rows(c) + _repeated_kv(c)  # + the (n, n) bool mask and its inverse
    return 6 * _square(c) + _rows(c) + _repeated_kv(c)


def textbook_training_bytes(c: BenchConfig) -> int:
    """Autograd keeps the weights W (softmax's output, which its backward and W·V's both need) and,
    under the causal mask, the inverted ``(n, n)`` boolean mask. The backward's peak is softmax's
    backward: W, its gradient dW = dO·Vᵀ and the scores' gradient dS, three n×n, beside the output
    and dV. Measured in fresh processes (n = 1024, float32 and bfloat16, causal or not) within 1 %."""
    if c.mode == "bwd":
        return 2 * _square(c) + _rows(c)  # dW and dS (W was there), dV
    mask = c.n * c.n if c.causal else 0
    return 3 * _square(c) + 2 * _rows(c) + mask + _kept_copies(c, 1)  # W, dW, dS; output, dV


def trace_training_bytes(c: BenchConfig) -> int:
    """Autograd keeps three n×n of the traced softmax: the scores its row max reads, their exp, and
    the weights (``masked`` stands for the scores under a mask, whose inverted boolean mask is kept
    too). Backward through the max, subtract, exp, sum and divide of ``stable_softmax`` holds five
    n×n beyond what is kept at its peak, and in 16-bit a boolean n×n more (the max's backward
    compares every score with its row max). fwd+bwd: the weights are freed once W·V's backward has
    run, so two kept plus five; under the mask the forward's peak (the kept mask and its inverse)
    can be the higher. Measured in fresh processes (n = 1024, float32, bfloat16) within 1 %."""
    if c.mode == "bwd":
        eq = _square(c, 1) if c.itemsize < 4 else 0
        return 5 * _square(c) + eq + _rows(c)
    mask = c.n * c.n if c.causal else 0
    backward = 7 * _square(c) + 2 * _rows(c) + mask + _kept_copies(c, 1)
    return max(backward, trace_extra_bytes(c) + mask)


def fused_extra_bytes(c: BenchConfig) -> int:
    """A fused kernel writes the output and a per-row log-sum-exp; its tiles are negligible."""
    return _rows(c) + c.batch_heads * c.n * 4


def _math_itemsize(c: BenchConfig) -> int:
    """The math backend computes in float32 for 16-bit inputs, on every device, unless
    ``allow_fp16_bf16_reduction_math_sdp(True)``."""
    allowed = getattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed", lambda: False)()
    return c.itemsize if c.itemsize >= 4 or allowed else 4


def math_extra_bytes(c: BenchConfig) -> int:
    """torch's math backend, as ``_scaled_dot_product_attention_math`` computes it in torch 2.11 to 2.13: its peak
    is in ``_safe_softmax``, which holds the scores, their softmax and a boolean n×n "is −inf" tensor (the fully
    masked rows zeroed in place), beside what the comments below name. Checked against the CUDA allocator on an H100
    (fp16, n = 4096, 16 heads: 2.3 GiB, i.e. 2 float32 squares + 1 bool square) and against the peak RSS on the CPU.
    """
    acc = _math_itemsize(c)
    upcast = 3 * _rows(c, acc) if acc != c.itemsize else 0  # float32 copies of q, k, v
    scaled_qk = 2 * _rows(c, acc)  # q·√scale, and k·√scale (until the matmul ends)
    mask = c.n * c.n * acc if c.causal else 0  # the (n, n) additive causal mask
    return 2 * _square(c, acc) + _square(c, 1) + upcast + scaled_qk + mask + _repeated_kv(c)  # it repeats K/V for GQA


def math_training_bytes(c: BenchConfig) -> int:
    """torch's math backend under autograd, all in the accumulation dtype (float32 for 16-bit inputs):
    it keeps the scaled q and k (the matmul's inputs), the weights and the output; its backward's
    peak is softmax's backward, three n×n as the textbook code's, beside the output and dV. The
    causal flag's additive mask lives only in the forward. Measured in fresh processes (n = 1024,
    float32 and bfloat16) within 1 %."""
    acc = _math_itemsize(c)
    if c.mode == "bwd":
        return 2 * _square(c, acc) + _rows(c, acc)
    backward = 3 * _square(c, acc) + 3 * _rows(c, acc) + _rows(c) + _kept_copies(c, 1)  # scaled q, k; dV; output
    return max(backward, math_extra_bytes(c))


def fused_training_bytes(c: BenchConfig) -> int:
    """A fused kernel keeps the output and each row's log-sum-exp, O(B·H·n), and its backward rebuilds the weights
    tile by tile, holding dQ, dK, dV and the buffers named below: torch's CPU flash kernel's, and on CUDA
    FlashAttention-2's (a model from its source, not yet checked against the allocator)."""
    grads = (c.heads + 2 * c.kv_heads) * c.batch * c.n * c.d * c.itemsize  # dQ, and dK, dV of the shared heads
    if c.device == "cpu":
        q_split = 256 if c.n >= 768 else 64 if c.n >= 192 else 32  # torch's split sizes for the CPU kernel
        tile = min(q_split, c.n) * min(512, c.n)
        per_thread = 2 * tile * (4 + (c.itemsize if c.itemsize < 4 else 0))  # attn and grad_attn, float32 (+16-bit)
        work = _rows(c) + torch.get_num_threads() * per_thread  # dO made contiguous
    else:
        work = _rows(c, 4) + c.batch_heads * c.n * 4 + _repeated_kv(c)  # dQ in float32; D; dK, dV per query head
    backward = grads + work
    if c.mode == "bwd":
        return backward
    return _rows(c) + c.batch_heads * c.n * 4 + backward  # kept: the output and the row log-sum-exp


def numpy_extra_bytes(c: BenchConfig) -> int:
    """The product, then the scaled scores (max subtracted in place) and their exp (divided in
    place), both alive while the output is written. Causal adds the ``(n, n)`` boolean mask."""
    mask = c.n * c.n if c.causal else 0
    return 2 * _square(c) + mask + _rows(c) + _repeated_kv(c)


def tiled_config_bytes(c: BenchConfig) -> int:
    tiles = tiled_extra_bytes(c.n, c.n, c.d, itemsize=c.itemsize, batch_heads=c.batch_heads, device=c.device)
    return tiles + _repeated_kv(c)


def tiled_training_bytes(c: BenchConfig) -> int:
    """``TiledAttentionFunction`` keeps the output (float32 for 16-bit inputs) and each row's log-sum-exp
    (:func:`.tiled_saved_bytes`), and returns the output in the inputs' dtype. Its backward (``_backward`` in
    tiled.py) holds what the comments below name, D per row among them: O(n·block), never n×n."""
    acc = max(c.itemsize, 4)
    widened = acc != c.itemsize
    bh = c.batch_heads
    block = pick_block_size(c.device, c.n, c.n, batch_heads=bh, itemsize=c.itemsize)
    b = min(block, c.n)
    copies = _rows(c, acc) + (3 * _rows(c, acc) if widened else 0)  # q·scale; float32 k, v, dO
    grads = 3 * _rows(c, acc) + (3 * _rows(c) if widened else 0)  # accumulators; cast back
    tiles = bh * b * b * 2 * acc + 3 * bh * b * c.d * acc  # scores (then P) and dP; dQ's buffer, dK and dV
    backward = copies + bh * c.n * acc + grads + tiles + _kept_copies(c, 2)
    if c.mode == "bwd":
        return backward
    kept = tiled_saved_bytes(c.n, c.d, itemsize=c.itemsize, batch_heads=bh)
    return kept + (_rows(c) if widened else 0) + backward


def triton_config_bytes(c: BenchConfig) -> int:
    return tiled_triton_extra_bytes(c.n, c.d, itemsize=c.itemsize, batch_heads=c.batch_heads) + _repeated_kv(c)


# n×n matrices the textbook code and the traced path hold at the peak of a run in each mode,
# the squares of the models above, for the page's table; a backward timed alone still needs what its
# forward kept, so bwd counts as fwd+bwd.
PEAK_SQUARES = {"fwd": (2, 6), "bwd": (3, 7), "fwd+bwd": (3, 7)}


def route_extra_bytes(route: str, c: BenchConfig, *, features: int = 256, rank: int = 256) -> int:
    """An efficient route's forward (:mod:`.routes`), as each allocates, plus what it holds between calls (the dense
    mask, Linformer's projections), which a measured peak of one call does not see."""
    bh, n, d, item = c.batch_heads, c.n, c.d, c.itemsize
    if route == "sdpa-masked":
        own = n * n + n * n * item + _rows(c) + bh * n * 4  # bool mask, its float copy, output, row statistic
    elif route == "flex-window":
        own = _rows(c) + bh * n * 4 + 8 * math.ceil(n / FLEX_BLOCK) ** 2 * 4  # output, log-sum-exp, tiles (int32)
    elif route == "linformer":
        # E and F (held between calls), E·K and F·V, then the (n, rank) scores and their softmax
        own = 2 * rank * n * item + 2 * bh * rank * d * item + 2 * bh * n * rank * item
    else:
        own = _feature_bytes(c, d if route == "linear" else features, performer=route == "performer")
    return own + _repeated_kv(c)


def _feature_bytes(c: BenchConfig, width: int, *, performer: bool) -> int:
    bh, n, d, item = c.batch_heads, c.n, c.d, c.itemsize
    maps = 2 * bh * n * width * item  # φ(q) and φ(k)
    # Building them: linear's elu is elementwise; the Performer holds φ(q) while φ(k)'s projection,
    # exponent, shifted exponent and exp are alive at once, and q and k times √scale.
    build = 5 * maps // 2 + 2 * _rows(c) if performer else maps
    if not c.causal:
        return max(build, maps + 2 * _rows(c) + bh * width * d * item)  # + φ(q)·S, the output, S (width, d)
    chunk = min(DEFAULT_CHUNK, n)  # linear_attention's causal chunks
    chunks = math.ceil(n / chunk)
    padded = 2 * bh * chunks * chunk * width * item + bh * chunks * chunk * d * item  # padded φ(q), φ(k), v
    states = 3 * bh * chunks * width * d * item  # each chunk's φ(k)ᵀv, their cumulative sum, shifted
    local = 2 * bh * chunks * chunk * chunk * item  # the chunk squares, before and after masking
    return max(build, maps + padded + states + local + 2 * _rows(c))
