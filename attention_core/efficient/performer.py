"""The Performer's FAVOR+ (Choromanski et al. 2021): softmax attention through random features.

For ``m`` random vectors ``w_r`` and ``φ(x) = exp(w_rᵀx − |x|²/2) / √m`` (r = 1..m), the mean of
``φ(q)·φ(k)`` over the draw of the ``w_r`` is exactly ``exp(qᵀk)``: softmax's kernel. So linear
attention with these features (:func:`.linear.feature_attention`) estimates softmax attention
in O(n·m) time and memory, and the estimate tightens as ``m`` grows, its error roughly as 1/√m.

- *Positive* features (an exponential, not sines and cosines): every estimated weight is ≥ 0, so
  the row sums in the denominator never come near 0 or change sign.
- *Orthogonal* features: the ``w_r`` come in blocks of ``E`` mutually orthogonal directions (QR
  of a Gaussian matrix), so a block covers the directions evenly.
- Their *lengths*: ``"fixed"`` (the default, the regularised option of the Performer's own code) gives
  every ``w_r`` the length √E; ``"chi"`` draws each as a Gaussian vector's, so the estimate is exactly
  unbiased but heavy-tailed. With scaled ``|q|² ≈ 1.4`` (n = 256, E = 32, q, k ~ N(0, 0.25)) chi's error
  falls only 2.9× from 16 to 256 features (its 1/√m law holds past about 4,000); fixed lengths' falls 3.8×,
  lower at every m shown, at the price of a small bias (an error that levels off near 3 % past 16,000).

The error is small when ``|q|`` and ``|k|`` (after the scale) are small, i.e. when attention is
spread out; for peaked attention the estimate's variance, which grows as exp(|q + k|²), wins.
"""

from __future__ import annotations

import math

import torch

from ..attention import overflow_error
from ..device import new_tensor_device
from ..validation import all_finite, check_choice, check_int, check_tensor
from .linear import DEFAULT_CHUNK, _attend, _check_features


def orthogonal_features(
    features: int,
    dim: int,
    *,
    seed: int,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
    lengths: str = "fixed",
) -> torch.Tensor:
    """``features`` random vectors of size ``dim``, as ``(features, dim)``: orthogonal within each block
    of ``dim`` rows, each of length √dim (``lengths="fixed"``) or as long as a standard Gaussian vector
    (``"chi"``; module docstring). Drawn on the CPU in float64 from ``seed``, so a seed gives the same
    features on every device."""
    m = check_int("features", features, low=1, high=1 << 16)
    d = check_int("dim", dim, low=1, high=1 << 14)
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    lengths = check_choice("lengths", lengths, ("fixed", "chi"))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    blocks = math.ceil(m / d)
    gaussian = torch.randn(blocks, d, d, generator=gen, dtype=torch.float64)  # (blocks, d, d)
    ortho, r = torch.linalg.qr(gaussian)  # columns orthonormal, one QR per block in one call
    ortho = ortho * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).unsqueeze(-2)  # signs fixed: uniform (Haar)
    directions = ortho.transpose(-2, -1).reshape(blocks * d, d)[:m]  # (m, d): rows orthonormal within a block
    if lengths == "chi":
        norms = torch.randn(m, d, generator=gen, dtype=torch.float64).norm(dim=-1)  # (m,): chi with d degrees
    else:
        norms = torch.full((m,), math.sqrt(d), dtype=torch.float64)  # (m,): E|g|² = d for a Gaussian g
    return (directions * norms[:, None]).to(device=new_tensor_device(device), dtype=dtype)  # (m, d)


def favor_features(x: torch.Tensor, w: torch.Tensor, *, is_query: bool) -> torch.Tensor:
    """Positive random features ``exp(w_rᵀx − |x|²/2 − shift) / √m`` of ``x (N, ..., L, E)`` → ``(N, ..., L, m)``.

    ``x`` must already carry its half of the scale. ``shift`` is each row's largest exponent for
    queries and the largest over every key of the slice for keys: constants that cancel in attention.
    """
    proj = x @ w.transpose(-2, -1)  # (N, ..., L, E) @ (E, m) -> (N, ..., L, m)
    exponent = proj - 0.5 * (x * x).sum(dim=-1, keepdim=True)  # (N, ..., L, m)
    shift = exponent.amax(dim=-1, keepdim=True) if is_query else exponent.amax(dim=(-2, -1), keepdim=True)
    return torch.exp(exponent - shift) / math.sqrt(w.shape[0])  # (N, ..., L, m)


def performer_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
    features: int | None = None, seed: int = 0, w: torch.Tensor | None = None, is_causal: bool = False,
    scale: float | None = None, chunk: int = DEFAULT_CHUNK, lengths: str = "fixed",
) -> torch.Tensor:  # fmt: skip
    """FAVOR+ estimate of softmax(Q Kᵀ · scale) V with orthogonal positive random features.

    ``q (N, ..., L, E)``, ``k (N, ..., S, E)``, ``v (N, ..., S, Ev)`` → ``(N, ..., L, Ev)``. Either
    ``features`` random vectors drawn from ``seed`` with ``lengths`` (module docstring), or given vectors
    ``w (m, E)`` (from :func:`orthogonal_features`, drawn once and reused, as a trained Performer keeps
    them). ``is_causal`` runs the prefix-sum form (needs L = S).
    """
    s = _check_features(q, k, v, is_causal, scale)
    chunk = check_int("chunk", chunk, low=1, high=1 << 16)
    if (w is None) == (features is None):
        raise ValueError("give features (how many random vectors to draw) or w (the vectors), not both")
    if w is None:
        w = orthogonal_features(features, q.shape[-1], seed=seed, device=q.device, dtype=q.dtype, lengths=lengths)
    check_tensor("w", w, min_dim=2)
    if w.dim() != 2 or w.shape[-1] != q.shape[-1]:
        raise ValueError(f"w must be (features, E={q.shape[-1]}), got {tuple(w.shape)}")
    if w.device != q.device or w.dtype != q.dtype:
        raise ValueError(f"w must be {q.dtype} on {q.device}, like q; got {w.dtype} on {w.device}")
    half = math.sqrt(s)  # q·k·scale = (q·√scale)·(k·√scale)
    phi_q, phi_k = favor_features(q * half, w, is_query=True), favor_features(k * half, w, is_query=False)
    if not (all_finite(phi_q) and all_finite(phi_k)):  # |x|² or w·x beyond the dtype (float16: 65,504)
        raise overflow_error(q.dtype, "the Performer's exponents w·x − |x|²/2")
    return _attend(phi_q, phi_k, v, is_causal, chunk)
