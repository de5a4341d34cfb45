"""Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs"), in three forms.

Softmax attention weighs key ``j`` for query ``i`` by ``exp(q_i·k_j)``. Replace that kernel by a
dot product of features, ``φ(q_i)·φ(k_j)``, and the sum over keys can be taken first:

    out_i = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ) / φ(q_i)ᵀ (Σ_j φ(k_j))        S = Σ φ(k) vᵀ is (E, Ev)

so time and memory grow as n, not n². With φ(x) = elu(x) + 1 (positive, so the weights are) it
is a different function from softmax attention, not an approximation of it.

- :func:`linear_attention`: the parallel form; with ``is_causal`` the sums run over ``j ≤ i``,
  taken chunk by chunk: a running state across chunks (an exclusive cumulative sum of each
  chunk's ``φ(k)ᵀv``) plus the small masked square inside each chunk;
- :func:`linear_attention_recurrent`: the causal form as an RNN, what makes decoding O(1) per token;
- :func:`feature_attention`: the same arithmetic for any positive features, shared with the
  Performer (:mod:`.performer`).

Linear attention has no 1/√E scale: the feature map replaces the exponential.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..attention import check_attention_args, overflow_error
from ..validation import all_finite, broadcast_shapes, check_bool, check_int

DEFAULT_CHUNK = 64  # tokens per chunk of the causal form: a C×C square per chunk, n/C states


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1, elementwise: positive everywhere, ≈ x + 1 for x > 0 and eˣ below."""
    return F.elu(x) + 1.0


def _check_features(
    phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor, is_causal: bool, scale: float | None = None
) -> float:
    """Check the inputs of a feature route; return the scale (default 1/√E), for the Performer's."""
    s, _ = check_attention_args(phi_q, phi_k, v, None, 0.0, False, scale, positive_scale=True, min_length=1)
    check_bool("is_causal", is_causal)
    if is_causal and phi_q.shape[-2] != phi_k.shape[-2]:
        raise ValueError(
            f"the causal form needs as many queries as keys (self-attention), got L={phi_q.shape[-2]} and "
            f"S={phi_k.shape[-2]}"
        )
    return s


def _safe_divide(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """``num / den``, the last step of every feature route. Features can underflow to 0 for very
    negative inputs; 0/0 there gives 0, not NaN. A sum that overflowed the dtype raises."""
    out = num / den.clamp_min(torch.finfo(den.dtype).tiny)
    if not all_finite(out):
        raise overflow_error(out.dtype, "a sum of the features φ(q)·φ(k) (or of φ(k) vᵀ)")
    return out


def feature_attention(
    phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor, *, is_causal: bool = False, chunk: int = DEFAULT_CHUNK
) -> torch.Tensor:
    """Attention with weights ∝ φ(q_i)·φ(k_j), for non-negative features ``phi_q (N, ..., L, M)`` and
    ``phi_k (N, ..., S, M)``, values ``v (N, ..., S, Ev)`` → ``(N, ..., L, Ev)``, in O(n) memory.
    ``is_causal`` (needs L = S) runs the chunked form, ``chunk`` tokens a chunk."""
    _check_features(phi_q, phi_k, v, is_causal)
    return _attend(phi_q, phi_k, v, is_causal, check_int("chunk", chunk, low=1, high=1 << 16))


def _attend(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor, is_causal: bool, chunk: int) -> torch.Tensor:
    """:func:`feature_attention` on checked inputs."""
    if not is_causal:
        kv = phi_k.transpose(-2, -1) @ v  # (N, ..., M, S) @ (N, ..., S, Ev) -> (N, ..., M, Ev)
        z = phi_k.sum(dim=-2).unsqueeze(-1)  # (N, ..., M, 1)
        return _safe_divide(phi_q @ kv, phi_q @ z)  # (N, ..., L, Ev) / (N, ..., L, 1)
    n = phi_q.shape[-2]
    c = min(chunk, n)
    blocks = math.ceil(n / c)
    pad = blocks * c - n  # zero keys and values at the end add nothing to any sum
    qc = F.pad(phi_q, (0, 0, 0, pad)).unflatten(-2, (blocks, c))  # (N, ..., nc, C, M)
    kc = F.pad(phi_k, (0, 0, 0, pad)).unflatten(-2, (blocks, c))  # (N, ..., nc, C, M)
    vc = F.pad(v, (0, 0, 0, pad)).unflatten(-2, (blocks, c))  # (N, ..., nc, C, Ev)
    chunk_kv = kc.transpose(-2, -1) @ vc  # (N, ..., nc, M, C) @ (N, ..., nc, C, Ev) -> (N, ..., nc, M, Ev)
    chunk_z = kc.sum(dim=-2)  # (N, ..., nc, M)
    # The state before each chunk: an exclusive cumulative sum over the chunks.
    before_kv = torch.cat([torch.zeros_like(chunk_kv[..., :1, :, :]), chunk_kv.cumsum(dim=-3)[..., :-1, :, :]], dim=-3)
    before_z = torch.cat([torch.zeros_like(chunk_z[..., :1, :]), chunk_z.cumsum(dim=-2)[..., :-1, :]], dim=-2)
    inside = torch.ones(c, c, dtype=torch.bool, device=phi_q.device).tril()  # (C, C): j ≤ i within a chunk
    local = (qc @ kc.transpose(-2, -1)).masked_fill(inside.logical_not(), 0.0)  # (N, ..., nc, C, C)
    num = local @ vc + qc @ before_kv  # (N, ..., nc, C, Ev)
    den = local.sum(dim=-1, keepdim=True) + qc @ before_z.unsqueeze(-1)  # (N, ..., nc, C, 1)
    return _safe_divide(num, den).flatten(-3, -2)[..., :n, :]  # (N, ..., L, Ev)


def linear_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, is_causal: bool = False, chunk: int = DEFAULT_CHUNK
) -> torch.Tensor:
    """Linear attention with φ = elu + 1: ``q (N, ..., L, E)``, ``k (N, ..., S, E)``, ``v (N, ..., S, Ev)``
    → ``(N, ..., L, Ev)``. Memory O(n·E·Ev / chunk + n·chunk) causal, O(n) otherwise."""
    _check_features(q, k, v, is_causal)
    chunk = check_int("chunk", chunk, low=1, high=1 << 16)
    return _attend(elu_feature_map(q), elu_feature_map(k), v, is_causal, chunk)


def linear_attention_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal linear attention as an RNN: one token at a time, carrying the running state
    ``S = Σ_{j≤i} φ(k_j) v_jᵀ`` ``(N, ..., E, Ev)`` and ``z = Σ_{j≤i} φ(k_j)`` ``(N, ..., E)``.

    Needs L = S. Returns ``(N, ..., L, Ev)``, equal to ``linear_attention(q, k, v, is_causal=True)``
    up to rounding. A Python loop over tokens: slow for long sequences, and that is the point —
    each step costs the same, however long the past.
    """
    _check_features(q, k, v, True)
    phi_q, phi_k = elu_feature_map(q), elu_feature_map(k)
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    state = torch.zeros(*lead, q.shape[-1], v.shape[-1], dtype=v.dtype, device=v.device)  # (N, ..., E, Ev)
    z = torch.zeros(*lead, q.shape[-1], dtype=v.dtype, device=v.device)  # (N, ..., E)
    outputs = []
    for i in range(q.shape[-2]):
        state = state + phi_k[..., i, :, None] * v[..., i, None, :]  # (N, ..., E, 1) * (N, ..., 1, Ev)
        z = z + phi_k[..., i, :]  # (N, ..., E)
        num = (phi_q[..., i, None, :] @ state).squeeze(-2)  # (N, ..., 1, E) @ (N, ..., E, Ev) -> (N, ..., Ev)
        den = (phi_q[..., i, :] * z).sum(dim=-1, keepdim=True)  # (N, ..., 1)
        outputs.append(_safe_divide(num, den))
    return torch.stack(outputs, dim=-2)  # (N, ..., L, Ev)
