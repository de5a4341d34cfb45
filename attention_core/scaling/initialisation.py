"""How the projections' initial std sets the score variance, with or without LayerNorm first."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd
import torch
from torch.nn import functional as F

from ..attention import stable_softmax
from ..device import new_tensor_device
from ..layers import xavier_std
from ..validation import check_float, check_int, check_ints
from ._sampling import MAX_D_K, MAX_KEYS, _generator, entropy_pct


def named_init_stds(d_model: int, d_k: int) -> dict[str, float]:
    """The usual initial stds of W_q, W_k ``(d_model, d_k)``: 1/√d_model (LeCun), Xavier, 0.01, 0.5."""
    d_model, d_k = check_ints(d_model=d_model, d_k=d_k, low=1, high=MAX_D_K)
    return {"1/√d_model": 1.0 / math.sqrt(d_model), "Xavier": xavier_std(d_model, d_k), "0.01": 0.01, "0.5": 0.5}


def init_effects(
    d_model: int, d_k: int, stds: Mapping[str, float], layernorm: bool = False, seed: int = 0,
    *, n_tokens: int = 256, device: str | torch.device | None = None,
) -> pd.DataFrame:  # fmt: skip
    """The scores' variance for each initial std σ (``stds``: label → σ) of W_q, W_k ``(d_model, d_k)`` ~ N(0, σ²).

    Token vectors x ``(n_tokens, d_model)`` are N(0, 1) times a per-token gain, log-uniform on [0.5, 4] (like a
    residual stream), normalised first (no affine part) with ``layernorm``. Theory: Var(qᵢ) = d_model σ² E[x²],
    Var(q·k) = d_k Var(qᵢ)². Columns: ``init``, ``std``, ``x_var`` (E[x²]), ``q_var``, ``q_var_theory``,
    ``score_var_unscaled``, ``score_var_theory``, ``score_var_scaled`` (÷√d_k), ``optimal_divisor`` (the scores'
    std), ``entropy_pct_scaled`` (softmax over all tokens, ÷√d_k).
    """
    d_model, d_k = check_ints(d_model=d_model, d_k=d_k, low=1, high=MAX_D_K)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    n_tokens = check_int("n_tokens", n_tokens, low=2, high=MAX_KEYS)
    if not isinstance(stds, Mapping) or not stds:
        raise ValueError("stds must map at least one label to a standard deviation")
    named = [(str(k), check_float(f"std {k!r}", s, low=0.0, low_open=True, high=100.0)) for k, s in stds.items()]
    dev = new_tensor_device(device)
    g = _generator(seed, "init", d_model, d_k, n_tokens, device=dev)
    z = torch.randn(n_tokens, d_model, generator=g, device=dev, dtype=torch.float64)  # (n_tokens, d_model)
    gain = torch.exp(torch.empty(n_tokens, 1, dtype=torch.float64, device=dev).uniform_(  # (n_tokens, 1)
        math.log(0.5), math.log(4.0), generator=g))  # fmt: skip
    x = z * gain  # (n_tokens, d_model)
    if layernorm:
        x = F.layer_norm(x, (d_model,))  # (n_tokens, d_model)
    x_var = float((x**2).mean())
    # W ~ N(0, σ²) is σ·W₀ with W₀ ~ N(0, 1), so q = σ·(x W₀) and scores = σ²·(x W₀)(x W₀')ᵀ: one
    # projection serves every σ. W₀ is drawn a block of columns at a time into one reused buffer,
    # so a (1024 × 4096) projection never sits in memory whole.
    block = max(1, min(d_k, (1 << 18) // d_model))
    w_buf = torch.empty(d_model, block, dtype=torch.float64, device=dev)
    q0 = torch.empty(n_tokens, d_k, dtype=torch.float64, device=dev)  # (n_tokens, d_k)
    k0 = torch.empty(n_tokens, d_k, dtype=torch.float64, device=dev)  # (n_tokens, d_k)
    for proj in (q0, k0):
        for j in range(0, d_k, block):
            w = w_buf[:, : min(block, d_k - j)].normal_(generator=g)  # (d_model, b)
            proj[:, j : j + w.shape[1]] = x @ w  # (n_tokens, d_model) @ (d_model, b) -> (n_tokens, b)
    scores0 = q0 @ k0.T  # (n_tokens, d_k) @ (d_k, n_tokens) -> (n_tokens, n_tokens)
    out = []
    for label, std in named:
        scores = scores0 * std**2  # (n_tokens, n_tokens)
        q_theory = d_model * std**2 * x_var
        w = stable_softmax(scores / math.sqrt(d_k))  # (n_tokens, n_tokens)
        out.append(
            {
                "init": label,
                "std": std,
                "x_var": x_var,
                "q_var": float(q0.var()) * std**2,  # q = σ·q0
                "q_var_theory": q_theory,
                "score_var_unscaled": float(scores.var()),
                "score_var_theory": d_k * q_theory**2,
                "score_var_scaled": float(scores.var()) / d_k,
                "optimal_divisor": float(scores.std()),
                "entropy_pct_scaled": float(entropy_pct(w).mean()),
            }
        )
    return pd.DataFrame(out)
