"""Multi-head attention, and its two economies: grouped-query (GQA) and multi-query (MQA).

    Q = X W_q   split into h heads of d_k = d_model / h          (N, h, L, d_k)
    K = X W_k   split into g heads (g = n_kv_heads, g divides h)  (N, g, S, d_k)
    V = X W_v   likewise                                          (N, g, S, d_v)
    O = concat_i attention(Q_i, K_{i // (h/g)}, V_{i // (h/g)}) W_o

g = h is multi-head attention (MHA, "Attention Is All You Need"), g = 1 is multi-query
attention (MQA, Shazeer 2019), and any g in between that divides h is grouped-query
attention (GQA, Ainslie et al. 2023). Query head i reads K/V head ``i // (h / g)``, as
``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)`` does.

Weights are right-multiplied, as in the walkthrough: ``w_q (d_model, h·d_k)``,
``w_k (d_model, g·d_k)``, ``w_v (d_model, g·d_v)``, ``w_o (h·d_v, d_out)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .attention import AttentionTrace, attention_trace, dot_product_attention
from .validation import check_int, check_tensor, check_weight


@dataclass(frozen=True)
class MultiHeadTrace:
    """Every intermediate of one multi-head call, named.

    Shapes (leading batch dims ``N, ...`` as in ``x``): ``q (N, ..., h, L, d_k)``,
    ``k (N, ..., g, S, d_k)``, ``v (N, ..., g, S, d_v)``; ``heads`` is the attention
    trace with K/V already repeated to h heads, so ``heads.weights`` is
    ``(N, ..., h, L, S)``, one weight matrix per query head; ``concat (N, ..., L, h·d_v)``;
    ``output (N, ..., L, d_out)``.
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    heads: AttentionTrace
    concat: torch.Tensor
    output: torch.Tensor


def check_head_counts(n_heads: object, n_kv_heads: object | None = None) -> tuple[int, int]:
    """``(h, g)`` as ints; ``g`` defaults to ``h``. ``ValueError`` unless 1 ≤ g ≤ h and g divides h."""
    h = check_int("n_heads", n_heads, low=1)
    g = h if n_kv_heads is None else check_int("n_kv_heads", n_kv_heads, low=1)
    if g > h:
        raise ValueError(f"n_kv_heads ({g}) cannot exceed n_heads ({h}): each K/V head serves ≥ 1 query head")
    if h % g:
        raise ValueError(
            f"n_kv_heads ({g}) must divide n_heads ({h}) so that every K/V head serves the same number "
            f"of query heads; choose one of {', '.join(map(str, divisors(h)))}"
        )
    return h, g


def divisors(n: int) -> tuple[int, ...]:
    """The K/V head counts that ``n`` query heads allow: every divisor of ``n``."""
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def attention_kind(n_heads: int, n_kv_heads: int) -> str:
    """The name of attention with ``n_kv_heads`` K/V heads for ``n_heads`` query heads: MHA, GQA or MQA."""
    return "MHA" if n_kv_heads == n_heads else "MQA" if n_kv_heads == 1 else "GQA"


def head_size(d_model: int, n_heads: int) -> int:
    """d_k = d_model / h; ``ValueError`` unless h divides d_model."""
    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
    return d_model // n_heads


def kv_head_of(query_head: int, n_heads: int, n_kv_heads: int) -> int:
    """The K/V head that query head ``query_head`` reads: ``query_head // (h / g)``."""
    h, g = check_head_counts(n_heads, n_kv_heads)
    i = check_int("query_head", query_head, low=0, high=h - 1)
    return i // (h // g)


def split_heads(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(N, ..., L, h·d)`` → ``(N, ..., h, L, d)``: the last axis cut into h equal slices."""
    check_tensor("t", t, min_dim=2, finite=False)
    h = check_int("n_heads", n_heads, low=1)
    *lead, L, width = t.shape
    if width % h:
        raise ValueError(f"the width {width} cannot be split into {h} heads of equal size ({width} % {h} ≠ 0)")
    return t.reshape(*lead, L, h, width // h).transpose(-3, -2)  # (N, ..., h, L, d)


def merge_heads(t: torch.Tensor) -> torch.Tensor:
    """``(N, ..., h, L, d)`` → ``(N, ..., L, h·d)``: the heads side by side again (the inverse of split)."""
    check_tensor("t", t, min_dim=3, finite=False)
    *lead, h, L, d = t.shape
    return t.transpose(-3, -2).reshape(*lead, L, h * d)  # (N, ..., L, h·d)


def repeat_kv(t: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(N, ..., g, S, d)`` → ``(N, ..., h, S, d)``: each K/V head repeated for its h/g query heads."""
    h, g = check_head_counts(n_heads, t.shape[-3])
    return t if g == h else t.repeat_interleave(h // g, dim=-3)  # (N, ..., h, S, d)


def _project(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, w_o: torch.Tensor, n_heads: int,
    n_kv_heads: int | None, x_kv: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:  # fmt: skip
    """The checked inputs' q ``(N, ..., h, L, d_k)``, k ``(N, ..., g, S, d_k)``, v ``(N, ..., g, S, d_v)``, and h."""
    h, g = check_head_counts(n_heads, n_kv_heads)
    check_tensor("x", x, min_dim=2)
    x_kv = x if x_kv is None else check_tensor("x_kv", x_kv, min_dim=2)
    d_model = x.shape[-1]
    if x_kv.shape[-1] != d_model:
        raise ValueError(f"x_kv must have the width of x (d_model = {d_model}), got {tuple(x_kv.shape)}")
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        check_weight(name, w, x, rows=d_model)
    check_weight("w_o", w_o, x)
    if w_q.shape[1] % h:
        raise ValueError(
            f"the query width {w_q.shape[1]} (d_model for standard multi-head attention) must be divisible by "
            f"n_heads = {h}, so that each head gets d_k = width / n_heads features"
        )
    d_k = w_q.shape[1] // h
    if w_k.shape[1] != g * d_k:
        raise ValueError(f"w_k must have n_kv_heads · d_k = {g} · {d_k} = {g * d_k} columns, got {w_k.shape[1]}")
    if w_v.shape[1] % g:
        raise ValueError(f"w_v's width {w_v.shape[1]} must be divisible by n_kv_heads = {g}")
    d_v = w_v.shape[1] // g
    if w_o.shape[0] != h * d_v:
        raise ValueError(
            f"w_o must have n_heads · d_v = {h} · {d_v} = {h * d_v} rows (the concatenated heads), "
            f"got {tuple(w_o.shape)}"
        )
    q = split_heads(x @ w_q, h)  # (N, ..., L, h·d_k) -> (N, ..., h, L, d_k)
    k = split_heads(x_kv @ w_k, g)  # (N, ..., S, g·d_k) -> (N, ..., g, S, d_k)
    v = split_heads(x_kv @ w_v, g)  # (N, ..., S, g·d_v) -> (N, ..., g, S, d_v)
    return q, k, v, h


def multi_head_trace(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, w_o: torch.Tensor,
    n_heads: int, n_kv_heads: int | None = None, *,
    x_kv: torch.Tensor | None = None, attn_mask: torch.Tensor | None = None, is_causal: bool = False,
    scale: float | None = None, dropout_p: float = 0.0,
) -> MultiHeadTrace:  # fmt: skip
    """Multi-head (or grouped-/multi-query) attention with every intermediate kept.

    Args:
        x: ``(N, ..., L, d_model)`` the tokens that ask (queries).
        w_q: ``(d_model, h·d_k)``; w_k: ``(d_model, g·d_k)``; w_v: ``(d_model, g·d_v)``; w_o: ``(h·d_v, d_out)``.
        n_heads: h, the number of query heads.
        n_kv_heads: g, the number of K/V heads; ``None`` means g = h (MHA), 1 is MQA.
        x_kv: ``(N, ..., S, d_model)`` the tokens that answer (keys and values); default ``x`` (self-attention).
        attn_mask: bool (``True`` = may attend) or float (added), broadcastable to ``(N, ..., h, L, S)``.
        is_causal: query ``i`` sees keys ``0..i`` (top-left aligned); exclusive with ``attn_mask``.
        scale: multiplier of the scores, default ``1/√d_k``.
        dropout_p: dropout on the weights (training), as torch SDPA's.
    """
    q, k, v, h = _project(x, w_q, w_k, w_v, w_o, n_heads, n_kv_heads, x_kv)
    heads = attention_trace(
        q, repeat_kv(k, h), repeat_kv(v, h), attn_mask, dropout_p, is_causal=is_causal, scale=scale
    )  # weights (N, ..., h, L, S), output (N, ..., h, L, d_v)
    concat = merge_heads(heads.output)  # (N, ..., L, h·d_v)
    output = concat @ w_o  # (N, ..., L, h·d_v) @ (h·d_v, d_out) -> (N, ..., L, d_out)
    return MultiHeadTrace(q=q, k=k, v=v, heads=heads, concat=concat, output=output)


def multi_head_attention(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, w_o: torch.Tensor,
    n_heads: int, n_kv_heads: int | None = None, *,
    x_kv: torch.Tensor | None = None, attn_mask: torch.Tensor | None = None, is_causal: bool = False,
    scale: float | None = None, dropout_p: float = 0.0,
) -> torch.Tensor:  # fmt: skip
    """concat_i softmax(Q_i K_{g(i)}ᵀ · scale) V_{g(i)} · W_o; returns ``(N, ..., L, d_out)``.

    Same arguments as :func:`multi_head_trace`, which keeps every intermediate; this one keeps none
    (the lean :func:`dot_product_attention` inside), so it costs what the arithmetic costs.
    """
    q, k, v, h = _project(x, w_q, w_k, w_v, w_o, n_heads, n_kv_heads, x_kv)
    out = dot_product_attention(
        q, repeat_kv(k, h), repeat_kv(v, h), attn_mask, dropout_p, is_causal=is_causal, scale=scale
    )  # (N, ..., h, L, d_v)
    return merge_heads(out) @ w_o  # (N, ..., L, h·d_v) @ (h·d_v, d_out) -> (N, ..., L, d_out)


def mean_pool_kv(w: torch.Tensor, n_heads: int, n_kv_heads: int) -> torch.Tensor:
    """Turn an MHA key (or value) projection ``w (d_model, h·d)`` into a GQA one ``(d_model, g·d)``.

    The GQA paper's conversion (Ainslie et al. 2023, §2.1): a group's K/V head is the mean of its heads,
    and since a projection is linear, averaging the heads' weight columns averages their keys.
    """
    check_tensor("w", w, min_dim=2)
    h, g = check_head_counts(n_heads, n_kv_heads)
    if w.dim() != 2 or w.shape[1] % h:
        raise ValueError(f"w must be (d_model, n_heads · d) with n_heads = {h}, got {tuple(w.shape)}")
    d_model, d = w.shape[0], w.shape[1] // h
    per_head = w.reshape(d_model, g, h // g, d)  # (d_model, g, h/g, d): heads of one group together
    return per_head.mean(dim=2).reshape(d_model, g * d)  # (d_model, g·d)


def attention_parameters(d_model: int, n_heads: int, n_kv_heads: int | None = None, *, bias: bool = False) -> int:
    """Weights of one attention block with d_k = d_model / h: W_q and W_o are d_model², W_k and W_v d_model·g·d_k."""
    d_model = check_int("d_model", d_model, low=1)
    h, g = check_head_counts(n_heads, n_kv_heads)
    kv_width = g * head_size(d_model, h)
    total = 2 * d_model * d_model + 2 * d_model * kv_width
    if bias:
        total += 2 * d_model + 2 * kv_width
    return total
