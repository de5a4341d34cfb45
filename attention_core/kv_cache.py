"""Decoding with a KV cache: one new token attends to every key and value kept so far.

Without a cache, each step of a decoder recomputes K, V and the whole causal attention although only its last row
is new (the scores grow as t² per step); with one, a step projects the new token alone and computes one row of
scores (∝ t). The cache's price is memory (:func:`kv_cache_bytes`), which grouped-query attention cuts: Llama-3-8B
keeps 8 K/V heads where Llama-2-7B keeps 32, for the same 32 query heads.
"""

from __future__ import annotations

import math
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import torch

from .attention import attention_trace, dot_product_attention
from .device import one_thread, resolve_device
from .heads import (
    attention_kind,
    check_head_counts,
    head_size,
    merge_heads,
    multi_head_attention,
    repeat_kv,
    split_heads,
)
from .power_law import fit_loglog_slope
from .validation import check_choice, check_float, check_int, check_int_list, check_ints, check_tensor

BYTES_PER_VALUE = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1}


@dataclass(frozen=True)
class ModelShape:
    """The attention shape of a published model, from its own configuration file."""

    name: str
    layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    max_context: int  # the context length the published configuration declares
    parameters: int  # total parameter count, as published
    source: str

    @property
    def kind(self) -> str:
        return attention_kind(self.n_heads, self.n_kv_heads)

    def cache_bytes(
        self, context: int, batch: int = 1, dtype: str = "float16", *, n_kv_heads: int | None = None
    ) -> int:
        """This model's KV cache; ``n_kv_heads`` overrides its own (``n_heads`` gives the MHA cache)."""
        g = self.n_kv_heads if n_kv_heads is None else n_kv_heads
        return kv_cache_bytes(self.layers, g, self.head_dim, context, batch, dtype)

    def longest_context(
        self, memory_bytes: int, batch: int = 1, dtype: str = "float16", *, n_kv_heads: int | None = None
    ) -> int:
        """The longest context whose cache fits in ``memory_bytes`` (0 if not even one token fits)."""
        per_token = self.cache_bytes(1, batch, dtype, n_kv_heads=n_kv_heads)
        return check_int("memory_bytes", memory_bytes, low=0) // per_token


# Each row is read from the Hugging Face config.json of the checkpoint named in ``source`` (GPT-2's keys are
# n_layer/n_head/n_embd/n_positions, the others' num_hidden_layers/num_attention_heads/num_key_value_heads/
# hidden_size/max_position_embeddings); head_dim = d_model / n_heads. Mistral's sliding window of 4096 would
# cap a rolling cache; the table counts the full cache.
MODEL_SHAPES: dict[str, ModelShape] = {
    m.name: m
    for m in (
        ModelShape("GPT-2 small", 12, 12, 12, 64, 768, 1024, 124_439_808, "openai-community/gpt2 config.json"),
        ModelShape("Llama-2-7B", 32, 32, 32, 128, 4096, 4096, 6_738_415_616, "meta-llama/Llama-2-7b-hf config.json"),
        ModelShape("Llama-3-8B", 32, 32, 8, 128, 4096, 8192, 8_030_261_248, "meta-llama/Meta-Llama-3-8B config.json"),
        ModelShape("Mistral-7B", 32, 32, 8, 128, 4096, 32768, 7_241_732_096, "mistralai/Mistral-7B-v0.1 config.json"),
        ModelShape("Llama-3-70B", 80, 64, 8, 128, 8192, 8192, 70_553_706_496,
                   "meta-llama/Meta-Llama-3-70B config.json"),
    )
}  # fmt: skip


def kv_cache_bytes(
    layers: int, n_kv_heads: int, head_dim: int, context: int, batch: int = 1, dtype: str | torch.dtype = "float16"
) -> int:
    """Bytes of a KV cache: 2 · layers · n_kv_heads · head_dim · context · batch · bytes per value."""
    layers, n_kv_heads, head_dim = check_ints(layers=layers, n_kv_heads=n_kv_heads, head_dim=head_dim, low=1)
    context = check_int("context", context, low=0)
    batch = check_int("batch", batch, low=1)
    itemsize = dtype.itemsize if isinstance(dtype, torch.dtype) else BYTES_PER_VALUE.get(dtype)
    if itemsize is None:
        raise ValueError(f"dtype must be one of {', '.join(BYTES_PER_VALUE)} or a torch.dtype, got {dtype!r}")
    return 2 * layers * n_kv_heads * head_dim * context * batch * itemsize


# ---- one decoding step ----------------------------------------------------------------------


def decode_step(
    q_new: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, *, scale: float | None = None
) -> torch.Tensor:
    """The newest token's attention over the cache, softmax(q kᵀ · scale) v: ``(N, ..., h, 1, Ev)``.

    ``q_new (N, ..., h, 1, E)``; ``k_cache (N, ..., g, t, E)`` and ``v_cache (N, ..., g, t, Ev)`` hold
    every cached token, the new one's included, so no mask is needed: this is the last row of causal
    attention. ``g`` may be smaller than ``h`` (GQA/MQA) if it divides it.
    """
    check_tensor("q_new", q_new, min_dim=2)
    check_tensor("k_cache", k_cache, min_dim=2)
    check_tensor("v_cache", v_cache, min_dim=2)
    if q_new.shape[-2] != 1:
        raise ValueError(f"q_new must hold one new token: shape (N, ..., h, 1, E), got {tuple(q_new.shape)}")
    if q_new.dim() >= 3 and k_cache.dim() >= 3 and q_new.shape[-3] != k_cache.shape[-3]:
        if k_cache.shape[-3] != v_cache.shape[-3]:
            raise ValueError(
                f"k_cache and v_cache must have the same heads, got {k_cache.shape[-3]}, {v_cache.shape[-3]}"
            )
        k_cache, v_cache = repeat_kv(k_cache, q_new.shape[-3]), repeat_kv(v_cache, q_new.shape[-3])  # (N, ..., h, t, E)
    return dot_product_attention(q_new, k_cache, v_cache, scale=scale)  # (N, ..., h, 1, Ev)


@dataclass(frozen=True)
class DecodeRun:
    """What a token-by-token decode produced: ``output (L, d_out)`` (one row per step),
    ``weights`` (one ``(h, t + 1)`` tensor per step t), and the final cache ``k, v (g, L, d)``."""

    output: torch.Tensor
    weights: list[torch.Tensor]
    k: torch.Tensor
    v: torch.Tensor


def decode_with_cache(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, w_o: torch.Tensor,
    n_heads: int, n_kv_heads: int | None = None,
) -> DecodeRun:  # fmt: skip
    """Feed ``x (L, d_model)`` one token at a time, keeping K and V in a cache that grows by a row:
    step t projects token t alone, appends its k and v, and its query attends to the t + 1 cached
    keys. The rows of ``output`` equal causal :func:`multi_head_attention` over the whole sequence."""
    h, g = check_head_counts(n_heads, n_kv_heads)
    check_tensor("x", x, min_dim=2)
    if x.dim() != 2:
        raise ValueError(f"x must be (L, d_model), one sequence, got {tuple(x.shape)}")
    multi_head_attention(x[:1], w_q, w_k, w_v, w_o, h, g)  # the same shape checks as the full path
    L = x.shape[0]
    d_k, d_v = w_k.shape[1] // g, w_v.shape[1] // g
    k_cache = x.new_empty(g, L, d_k)  # (g, L, d_k): allocated once, filled a row per step
    v_cache = x.new_empty(g, L, d_v)  # (g, L, d_v)
    rows, weights = [], []
    for t in range(L):
        x_t = x[t : t + 1]  # (1, d_model)
        q = split_heads(x_t @ w_q, h)  # (h, 1, d_k)
        k_cache[:, t : t + 1] = split_heads(x_t @ w_k, g)  # (g, 1, d_k) written into row t
        v_cache[:, t : t + 1] = split_heads(x_t @ w_v, g)  # (g, 1, d_v)
        tr = attention_trace(q, repeat_kv(k_cache[:, : t + 1], h), repeat_kv(v_cache[:, : t + 1], h))
        weights.append(tr.weights[:, 0])  # (h, t + 1)
        rows.append(merge_heads(tr.output) @ w_o)  # (1, h·d_v) @ (h·d_v, d_out) -> (1, d_out)
    return DecodeRun(output=torch.cat(rows), weights=weights, k=k_cache, v=v_cache)


# ---- timing a step, cached against recomputed -----------------------------------------------

HARD_STOP = 1.25  # × the budget: past it no context is started, cached or not (a very busy machine)
FIT_POINTS = 3  # the slopes are fitted over this many of the largest measured contexts


@dataclass(frozen=True)
class DecodeTiming:
    """Seconds per decoding step at each context length, with a cache and recomputing everything.

    ``cached_s[i]`` and ``recompute_s[i]`` time one step at ``contexts[i]`` tokens already generated (the fastest of
    several calls: slower ones measure interruptions), or are ``None`` where it would have overrun the budget.
    """

    contexts: tuple[int, ...]
    cached_s: tuple[float | None, ...]
    recompute_s: tuple[float | None, ...]
    threads: int
    wall_s: float
    max_abs_diff: float  # max |cached step − last row of recomputed| at the largest recomputed context

    def points(self, which: str) -> tuple[list[int], list[float]]:
        """The contexts and seconds per step that were measured for ``which`` ("cached" or "recompute")."""
        check_choice("which", which, ("cached", "recompute"))
        times = self.cached_s if which == "cached" else self.recompute_s
        pairs = [(c, t) for c, t in zip(self.contexts, times, strict=True) if t is not None]
        return [c for c, _ in pairs], [t for _, t in pairs]

    def fit(self, which: str) -> tuple[float, float, int, int] | None:
        """``(slope, intercept, t_from, t_to)`` of log(seconds) = slope·log(t) + intercept over the
        largest :data:`FIT_POINTS` measured contexts; ``None`` with fewer than two points."""
        xs, ys = self.points(which)
        xs, ys = xs[-FIT_POINTS:], ys[-FIT_POINTS:]
        if len(xs) < 2:
            return None
        slope, intercept = fit_loglog_slope(xs, ys)  # about 1: linear growth, about 2: quadratic
        return slope, intercept, xs[0], xs[-1]


def _fastest_time(fn: Callable[[], object], repeats: int, min_total_s: float) -> float:
    """Fastest of ``repeats`` calls (more while they add up to under ``min_total_s``), after a warm-up."""
    timer = timeit.Timer(fn)
    if timer.timeit(1) > 0.1:  # the warm-up (allocations, the thread pool) took long enough to time reliably
        repeats = min(repeats, 2)  # spare the budget
    times: list[float] = []
    while len(times) < repeats or (sum(times) < min_total_s and len(times) < 200):
        times.append(timer.timeit(1))
    return min(times)


def time_decode_steps(
    contexts: Sequence[int] = (128, 256, 512, 1024, 2048, 4096, 8192),
    *, d_model: int = 128, n_heads: int = 4, n_kv_heads: int | None = None, seed: int = 0, repeats: int = 3,
    min_time_per_point: float = 0.02, budget_s: float = 3.5, device: str | torch.device | None = "cpu",
) -> DecodeTiming:  # fmt: skip
    """Time one decoding step at each context length t, with a cache and by recomputing everything.

    **cached**: project the new token, write its k and v into a preallocated cache, :func:`decode_step`
    over the t + 1 rows, then W_o: work ∝ t. **recompute**: causal :func:`multi_head_attention` over
    all t + 1 tokens, keeping the last row: scores ∝ t². Both run on one CPU thread (a step is many small
    operations). Recomputing stops at the first context whose predicted time would overrun ``budget_s``.
    """
    ctxs = sorted(set(check_int_list("contexts", contexts, low=1, high=1 << 15)))
    if len(ctxs) < 2:
        raise ValueError("contexts needs at least two different lengths to fit a slope")
    d_model = check_int("d_model", d_model, low=1, high=4096)
    h, g = check_head_counts(n_heads, n_kv_heads)
    d_k = head_size(d_model, h)
    repeats = check_int("repeats", repeats, low=1, high=100)
    budget_s = check_float("budget_s", budget_s, low=0.0, low_open=True)
    dev = resolve_device(device)
    gen = torch.Generator().manual_seed(seed)
    n_max = ctxs[-1] + 1
    x = torch.randn(n_max, d_model, generator=gen).to(dev)  # (T, d_model)
    w_q, w_k, w_v, w_o = (  # (d_model, h·d_k), (d_model, g·d_k), (d_model, g·d_k), (h·d_k, d_model)
        (torch.randn(d_model, width, generator=gen) / math.sqrt(d_model)).to(dev)
        for width in (d_model, g * d_k, g * d_k, d_model)
    )
    k_all = split_heads(x @ w_k, g)  # (g, T, d_k): the cache as the earlier steps left it
    v_all = split_heads(x @ w_v, g)  # (g, T, d_k)

    def cached_step(x_new: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        q = split_heads(x_new @ w_q, h)  # (h, 1, d_k)
        k_cache[:, -1:] = split_heads(x_new @ w_k, g)  # (g, 1, d_k) into the last row
        v_cache[:, -1:] = split_heads(x_new @ w_v, g)  # (g, 1, d_k)
        return merge_heads(decode_step(q, k_cache, v_cache)) @ w_o  # (1, d_model)

    def recompute_step(x_upto: torch.Tensor) -> torch.Tensor:
        return multi_head_attention(x_upto, w_q, w_k, w_v, w_o, h, g, is_causal=True)[-1:]  # (1, d_model)

    cached: list[float | None] = []
    recomputed: list[float | None] = []
    diff = 0.0
    started = time.perf_counter()
    deadline = started + budget_s
    hard_stop = started + HARD_STOP * budget_s  # nothing at all is started after this
    last: tuple[int, float] | None = None  # (context, seconds) of the last recomputed step
    with torch.inference_mode(), one_thread(dev):
        threads = torch.get_num_threads()
        for t in ctxs:
            cached_t = partial(cached_step, x[t : t + 1], k_all[:, : t + 1].clone(), v_all[:, : t + 1].clone())
            recompute_t = partial(recompute_step, x[: t + 1])  # the t + 1 tokens so far, (t+1, d_model)
            if cached and time.perf_counter() > hard_stop:  # a machine so busy that even the cheap steps overran
                cached.append(None)
                recomputed.append(None)
                continue
            cached.append(_fastest_time(cached_t, repeats, min_time_per_point))
            predicted = 0.0 if last is None else 3 * last[1] * (t / last[0]) ** 2
            if last is not None and time.perf_counter() + predicted > deadline:
                recomputed.append(None)
                continue
            recomputed.append(_fastest_time(recompute_t, repeats, min_time_per_point))
            last = (t, recomputed[-1])
            diff = float((cached_t() - recompute_t()).abs().max())
    return DecodeTiming(contexts=tuple(ctxs), cached_s=tuple(cached), recompute_s=tuple(recomputed), threads=threads,
                        wall_s=time.perf_counter() - started, max_abs_diff=diff)  # fmt: skip
