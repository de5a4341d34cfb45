"""The backward pass of attention, written out in its steps (FlashAttention-2's notation, listed with their shapes in
:class:`BackwardTrace`), from the forward's weights ``P`` (after the mask, and after dropout if it ran), its output
``O = P V`` and the gradient ``dO`` of some loss with respect to ``O``.

Softmax's Jacobian is diag(p) − p pᵀ for each row, so a row's dS is p ∘ (dp − p·dp): it needs
only the weights P and one number per row, p·dp, which equals rowsum(dO ∘ O) because O = P V.
That is why a fused kernel can keep just each row's log-sum-exp and recompute P tile by tile
instead of storing the n × n weights for the backward pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .attention import AttentionTrace, keep_scale
from .validation import check_tensor


@dataclass(frozen=True)
class BackwardTrace:
    """Every step of the backward pass, named."""

    grad_output: torch.Tensor  # dO                 (..., L, Ev)
    grad_v: torch.Tensor  # dV = Pᵀ dO              (..., S, Ev)
    grad_weights: torch.Tensor  # dP = dO Vᵀ        (..., L, S)
    row_dot: torch.Tensor  # D = rowsum(dO ∘ O)     (..., L, 1)
    grad_scores: torch.Tensor  # dS = P ∘ (dP − D)  (..., L, S), the gradient of the scaled, masked scores
    grad_q: torch.Tensor  # dQ = dS K · scale       (..., L, E)
    grad_k: torch.Tensor  # dK = dSᵀ Q · scale      (..., S, E)


def attention_backward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, trace: AttentionTrace, grad_output: torch.Tensor
) -> BackwardTrace:
    """The gradients of ``trace.output`` with respect to q, k and v, step by step.

    ``trace`` is :func:`attention_trace`'s result for these ``q (N, ..., L, E)``, ``k (N, ..., S, E)``,
    ``v (N, ..., S, Ev)``; ``grad_output`` is ``dO (N, ..., L, Ev)``. With dropout the dropped, rescaled weights
    stand for P; a blocked weight is 0 and so is its gradient. Where q, k or v broadcast over a leading dim,
    their gradients keep the broadcast shape (sum over that dim).
    """
    check_tensor("grad_output", grad_output, min_dim=2)
    if q.shape[-2] != trace.weights.shape[-2] or not k.shape[-2] == v.shape[-2] == trace.weights.shape[-1]:
        raise ValueError("q, k and v must be the inputs of trace: q (..., L, E), k (..., S, E), v (..., S, Ev)")
    if grad_output.shape != trace.output.shape:
        raise ValueError(
            f"grad_output must have the output's shape {tuple(trace.output.shape)}, got {tuple(grad_output.shape)}"
        )
    if grad_output.dtype != trace.output.dtype or grad_output.device != trace.output.device:
        raise ValueError("grad_output must have the output's dtype and device")
    grad_v = trace.dropped.transpose(-2, -1) @ grad_output  # (N, ..., S, L) @ (N, ..., L, Ev) -> (N, ..., S, Ev)
    grad_weights = grad_output @ v.transpose(-2, -1)  # (N, ..., L, Ev) @ (N, ..., Ev, S) -> (N, ..., L, S)
    if trace.dropout_keep is not None:  # dropout scales dP by keep / (1 − p) on its way back to the softmax
        grad_weights = grad_weights * trace.dropout_keep * keep_scale(trace.dropout_p)  # (N, ..., L, S)
    row_dot = (grad_output * trace.output).sum(dim=-1, keepdim=True)  # (N, ..., L, 1)
    grad_scores = trace.weights * (grad_weights - row_dot)  # (N, ..., L, S)
    grad_q = grad_scores @ k * trace.scale  # (N, ..., L, S) @ (N, ..., S, E) -> (N, ..., L, E)
    grad_k = grad_scores.transpose(-2, -1) @ q * trace.scale  # (N, ..., S, L) @ (N, ..., L, E) -> (N, ..., S, E)
    return BackwardTrace(grad_output, grad_v, grad_weights, row_dot, grad_scores, grad_q, grad_k)
