"""From token vectors to Q, K, V: projections, positions and a self-attention layer."""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import AttentionTrace
from .device import new_tensor_device
from .heads import head_size, multi_head_attention, multi_head_trace
from .validation import check_float, check_int, check_ints, check_tensor, check_weight


def project_qkv(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Q = X W_q, K = X W_k, V = X W_v: ``x (N, ..., L, d_model)``, ``w_q, w_k (d_model, d_k)``, ``w_v (d_model, d_v)``
    → ``q, k (N, ..., L, d_k)``, ``v (N, ..., L, d_v)``."""
    check_tensor("x", x, min_dim=2)
    d_model = x.shape[-1]
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        check_weight(name, w, x, rows=d_model)
    if w_q.shape[1] != w_k.shape[1]:
        raise ValueError(f"w_q and w_k must give the same d_k, got {w_q.shape[1]} and {w_k.shape[1]}")
    q = x @ w_q  # (N, ..., L, d_model) @ (d_model, d_k) -> (N, ..., L, d_k)
    k = x @ w_k  # (N, ..., L, d_k)
    v = x @ w_v  # (N, ..., L, d_v)
    return q, k, v


def sinusoidal_positions(
    n: int, d_model: int, *, dtype: torch.dtype = torch.float32, device: str | torch.device | None = None
) -> torch.Tensor:
    """The fixed position codes of "Attention Is All You Need", ``(n, d_model)`` on ``device``: even features
    ``sin(pos / 10000^(2i/d_model))``, odd ones the cosine of the same angle."""
    n = check_int("n", n, low=1, high=1 << 20)
    d_model = check_int("d_model", d_model, low=1, high=1 << 16)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    dev = new_tensor_device(device)
    pos = torch.arange(n, dtype=torch.float64, device=dev).unsqueeze(1)  # (n, 1)
    pair = torch.arange(0, d_model, 2, dtype=torch.float64, device=dev)  # (ceil(d_model/2),)
    angle = pos / torch.pow(10000.0, pair / d_model)  # (n, ceil(d_model/2))
    pe = torch.zeros(n, d_model, dtype=torch.float64, device=dev)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(dtype=dtype)


class SelfAttention(nn.Module):
    """Multi-head self-attention with W_q, W_k, W_v, W_o (Xavier-initialised), as an ``nn.Module``.

    Built on :func:`.heads.multi_head_attention` (:func:`.heads.multi_head_trace` when the weights are asked
    for; a test holds both to torch's ``nn.MultiheadAttention``). The biases ride on a column of ones in ``x``.
    """

    def __init__(
        self, d_model: int, n_heads: int = 1, *, dropout: float = 0.0, is_causal: bool = False, bias: bool = True
    ) -> None:
        super().__init__()
        d_model, n_heads = check_ints(d_model=d_model, n_heads=n_heads, low=1)
        head_size(d_model, n_heads)
        self.d_model, self.n_heads = d_model, n_heads
        self.dropout = check_float("dropout", dropout, low=0.0, high=1.0, high_open=True)
        self.is_causal = bool(is_causal)
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))
        for lin in (self.w_q, self.w_k, self.w_v, self.w_o):
            nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)

    def forward(
        self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, need_weights: bool = False
    ) -> tuple[torch.Tensor, AttentionTrace | None]:
        """``x (N, L, d_model)`` → ``(y (N, L, d_model), trace or None)``; ``attn_mask`` broadcasts to
        ``(N, nh, L, L)``, the trace's ``weights`` are ``(N, nh, L, L)``."""
        check_tensor("x", x, min_dim=2)
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (N, L, d_model={self.d_model}), got {tuple(x.shape)}")
        biased = self.w_q.bias is not None
        if biased:
            x = torch.cat([x, x.new_ones(*x.shape[:-1], 1)], dim=-1)  # (N, L, d_model + 1)
        w_q, w_k, w_v = (  # x @ W form: each weight transposed, its bias as a last row (for x's column of ones)
            torch.cat([lin.weight.T, lin.bias[None]]) if biased else lin.weight.T
            for lin in (self.w_q, self.w_k, self.w_v)
        )  # (d_model (+1), d_model)
        args = (x, w_q, w_k, w_v, self.w_o.weight.T, self.n_heads)
        kw = {"attn_mask": attn_mask, "is_causal": self.is_causal, "dropout_p": self.dropout if self.training else 0.0}
        if need_weights:
            mh = multi_head_trace(*args, **kw)  # type: ignore[arg-type]
            y, trace = mh.output, mh.heads  # (N, L, d_model); weights (N, nh, L, L)
        else:
            y, trace = multi_head_attention(*args, **kw), None  # type: ignore[arg-type]  # (N, L, d_model)
        return (y + self.w_o.bias if biased else y), trace

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, dropout={self.dropout}, is_causal={self.is_causal}"


def xavier_std(fan_in: int, fan_out: int) -> float:
    """Standard deviation of Xavier/Glorot initialisation, √(2 / (fan_in + fan_out))."""
    return math.sqrt(2.0 / (check_int("fan_in", fan_in, low=1) + check_int("fan_out", fan_out, low=1)))
