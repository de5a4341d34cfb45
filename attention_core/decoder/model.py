"""Gemma 3 270M's forward pass in plain torch, every layer's attention computed by our core.

    x = E[ids] · √D                                                          (1, n, D)
    per layer ℓ (local: RoPE base 10⁴ and a 512-token window; 5, 11, 17 global: base 10⁶, no window):
        h = RMSNorm(x)                                  gains stored as (1 + w)
        Q, K, V = h W_Qᵀ, h W_Kᵀ, h W_Vᵀ               4 query heads, 1 shared K/V head, d = 256
        Q, K = RoPE(RMSNorm(Q)), RoPE(RMSNorm(K))       QK-norm per head, then rotate-half RoPE
        A = attention(Q, K, V, causal (+ window) mask, scale 1/√256)   ← our five steps
        x = x + RMSNorm(concat_heads(A) W_Oᵀ)
        x = x + RMSNorm(W_down (GELU_tanh(h' W_gateᵀ) ⊙ h' W_upᵀ)),  h' = RMSNorm(x)
    logits = RMSNorm(x) Eᵀ                              the output is tied to the token table

A :class:`KVCache` keeps every layer's K and V (after QK-norm and RoPE), so decoding one more token
runs the layers on that token alone. Inference only.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from ..attention import attention_trace, dot_product_attention
from ..device import busy_cpu, one_thread
from .tokenizer import GemmaTokenizer, tokenizer_from_metadata
from .weights import DecoderConfig, DecoderWeights, LayerWeights, load_weights


def _threads(device: torch.device) -> contextlib.AbstractContextManager:
    """Every configured intra-op thread, but one while the CPU is busy (:func:`~attention_core.device.busy_cpu`).

    Measured on an idle 2-core machine, one generated token: 78 ms on one thread, 45 ms on two; on a busy
    one, 83 ms on one thread and 259 ms on two, the threads waiting on each other."""
    return one_thread(device) if busy_cpu() else contextlib.nullcontext()


def _linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``F.linear(x, w)`` for ``x (1, m, in)``; one position (decoding) goes through ``torch.mv``, which reads
    a bfloat16 table about 1.4× faster than ``F.linear`` does on the CPU."""
    if x.shape[:-1] == (1, 1):
        return torch.mv(w, x.reshape(-1)).view(1, 1, -1)  # (1, 1, out)
    return F.linear(x, w)  # (1, m, out)


@dataclass(frozen=True)
class Decoder:
    """A loaded decoder: config, weights (one device, one dtype) and tokenizer."""

    config: DecoderConfig
    weights: DecoderWeights
    tokenizer: GemmaTokenizer

    @property
    def device(self) -> torch.device:
        return self.weights.embed.device

    @property
    def dtype(self) -> torch.dtype:
        return self.weights.embed.dtype


def load_decoder(dtype: torch.dtype = torch.bfloat16, device: str | torch.device | None = None) -> Decoder:
    """Gemma 3 270M from the installed package (assembled and cached on first use) in ``dtype`` on ``device``."""
    f, cfg, weights = load_weights(dtype=dtype, device=device)
    return Decoder(cfg, weights, tokenizer_from_metadata(f.metadata))


# -- pieces of the layer ----------------------------------------------------------------------------------


def rms_norm(x: torch.Tensor, gain: torch.Tensor, eps: float) -> torch.Tensor:
    """x / √(mean(x²) + eps) · gain over the last axis, in float32, returned in ``x``'s dtype."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * gain).to(x.dtype)


def rope_cos_sin(positions: torch.Tensor, dim: int, base: float, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """cos and sin ``(m, dim)`` of RoPE's angles pos · base^(−2i/dim), each frequency written twice
    (rotate-half layout), computed in float32 on ``positions``' device."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=positions.device).float() / dim))  # (dim/2,)
    angles = positions.float().unsqueeze(1) * inv_freq.unsqueeze(0)  # (m, dim/2)
    angles = torch.cat([angles, angles], dim=-1)  # (m, dim)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (i, i + d/2) of ``x (..., m, d)`` by its position's angle: x·cos + (−x₂, x₁)·sin."""
    x1, x2 = x.chunk(2, dim=-1)  # the two halves
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin  # (..., m, d)


def decoder_mask(n_q: int, n_k: int, *, window: int | None, device: torch.device) -> torch.Tensor | None:
    """Bool ``(n_q, n_k)``, ``True`` = may attend, for the last ``n_q`` of ``n_k`` positions: key j ≤ query
    i (causal), and i − j < ``window`` when a window is given. ``None`` when every key is allowed."""
    offset = n_k - n_q
    if n_q == 1 and (window is None or n_k <= window):
        return None
    i = torch.arange(offset, n_k, device=device).unsqueeze(1)  # (n_q, 1): the queries' positions
    j = torch.arange(n_k, device=device).unsqueeze(0)  # (1, n_k)
    ok = j <= i  # (n_q, n_k)
    if window is not None:
        ok &= (i - j) < window
    return ok


@dataclass
class KVCache:
    """Each layer's K and V ``(1, g, capacity, d)``, after QK-norm and RoPE; ``length`` positions are filled."""

    k: list[torch.Tensor]
    v: list[torch.Tensor]
    length: int = 0

    @classmethod
    def empty(cls, model: Decoder, capacity: int) -> KVCache:
        cfg = model.config
        shape = (1, cfg.n_kv_heads, capacity, cfg.head_dim)
        make = lambda: torch.empty(shape, dtype=model.dtype, device=model.device)  # noqa: E731
        return cls([make() for _ in range(cfg.n_layers)], [make() for _ in range(cfg.n_layers)])

    @property
    def capacity(self) -> int:
        return self.k[0].shape[2]


@dataclass(frozen=True)
class LayerAttention:
    """One traced layer's attention on m new positions of n, float32.

    ``q (1, h, m, d)`` after QK-norm and RoPE; ``k``, ``v`` ``(1, g, n, d)`` (one shared K/V head here,
    ``k`` likewise normed and rotated); ``weights (1, h, m, n)``: the softmax weights, zero above the
    diagonal and, on a local layer, more than ``window − 1`` tokens back (the raw scores of every layer
    would double the memory: :func:`~attention_core.decoder.head_trace` gives one head's); ``x (1, m, D)``:
    the attention's input after its norm, when asked for.
    """

    layer: int
    is_global: bool
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    weights: torch.Tensor
    x: torch.Tensor | None = None


def _attention_layer(
    x: torch.Tensor, lw: LayerWeights, cfg: DecoderConfig, layer: int, cache: KVCache | None,
    positions: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, window: bool, trace: bool, keep_input: bool,
) -> tuple[torch.Tensor, LayerAttention | None]:  # fmt: skip
    """One layer's attention block on new positions ``p0 .. p0 + m − 1``; returns the residual stream after it."""
    B, m, _ = x.shape
    p0 = cache.length if cache is not None else 0
    h, g, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    hx = rms_norm(x, lw.attn_norm, cfg.rms_eps)  # (1, m, D)
    q, k, v = _linear(hx, lw.w_qkv).split([h * d, g * d, g * d], dim=-1)  # (1, m, h·d), (1, m, g·d) × 2
    q = q.view(B, m, h, d).transpose(1, 2)  # (1, h, m, d)
    k = k.view(B, m, g, d).transpose(1, 2)  # (1, g, m, d)
    v = v.view(B, m, g, d).transpose(1, 2)  # (1, g, m, d)
    q = apply_rope(rms_norm(q, lw.q_norm, cfg.rms_eps), cos, sin)  # (1, h, m, d): QK-norm, then RoPE
    k = apply_rope(rms_norm(k, lw.k_norm, cfg.rms_eps), cos, sin)  # (1, g, m, d)
    n = p0 + m
    if cache is not None:
        # index_copy_ and narrow rather than [...] = and [...]: plain ops, which a fake device runs too
        cache.k[layer].index_copy_(2, positions, k)
        cache.v[layer].index_copy_(2, positions, v)
        k, v = cache.k[layer].narrow(2, 0, n), cache.v[layer].narrow(2, 0, n)  # (1, g, n, d)
    span = None if cfg.is_global(layer) or not window else cfg.window
    # A prompt no longer than the window is plain causal: is_causal builds that mask inside the core.
    causal = p0 == 0 and m > 1 and (span is None or n <= span)
    mask = None if causal else decoder_mask(m, n, window=span, device=x.device)  # (m, n) or None
    qf, kf, vf = q.float(), k.float(), v.float()  # attention in float32, whatever the weights' dtype
    ka, va = kf, vf  # (1, g, n, d): g = 1 broadcasts over the query heads
    if g not in (1, h):  # grouped-query: query head i reads K/V head i // (h/g)
        ka, va = kf.repeat_interleave(h // g, dim=1), vf.repeat_interleave(h // g, dim=1)  # (1, h, n, d)
    record = None
    if trace:
        tr = attention_trace(qf, ka, va, mask, is_causal=causal, scale=cfg.scale)  # the five steps
        out = tr.output  # (1, h, m, d)
        kept = hx.float() if keep_input else None
        record = LayerAttention(layer, cfg.is_global(layer), qf, kf, vf, tr.weights, kept)
    else:
        out = dot_product_attention(qf, ka, va, mask, is_causal=causal, scale=cfg.scale)  # (1, h, m, d)
    out = out.to(x.dtype).transpose(1, 2).reshape(B, m, h * d)  # (1, m, h·d): heads side by side
    x = x + rms_norm(_linear(out, lw.w_o), lw.post_attn_norm, cfg.rms_eps)  # (1, m, D)
    return x, record


def _mlp(x: torch.Tensor, lw: LayerWeights, cfg: DecoderConfig) -> torch.Tensor:
    h = rms_norm(x, lw.ffn_norm, cfg.rms_eps)  # (1, m, D)
    gate, up = _linear(h, lw.w_gate_up).chunk(2, dim=-1)  # (1, m, F) each
    y = _linear(F.gelu(gate, approximate="tanh") * up, lw.w_down)  # (1, m, D)
    return x + rms_norm(y, lw.post_ffn_norm, cfg.rms_eps)  # (1, m, D)


def forward(
    model: Decoder, ids: torch.Tensor, cache: KVCache | None = None, *, trace: bool = False,
    window: bool = True, keep_input_of: int | None = None, stop_after: int | None = None,
) -> tuple[torch.Tensor, list[LayerAttention]]:  # fmt: skip
    """Run ``ids (1, m)`` (the positions after ``cache.length``) through every layer.

    Returns the final-normed hidden states ``(1, m, D)`` in the weights' dtype and, when ``trace``,
    one :class:`LayerAttention` per layer (with the attention's input on layer ``keep_input_of``).
    ``window=False`` lets the local layers see every earlier token. ``stop_after`` ends the pass after
    that layer (only its records matter then; the hidden states returned are not the model's output).
    The cache, when given, is filled and its ``length`` moved on.
    """
    cfg, w = model.config, model.weights
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or ids.dim() != 2 or ids.shape[0] != 1:
        raise ValueError("ids must be a (1, m) torch.long tensor of token ids")
    if ids.shape[1] == 0 or ids.device != model.device:
        raise ValueError(f"ids must hold at least one token, on the model's device {model.device}")
    p0 = 0 if cache is None else cache.length
    m = ids.shape[1]
    if cache is not None and p0 + m > cache.capacity:
        raise ValueError(f"the KV cache holds {cache.capacity} positions; {p0 + m} were asked for")
    positions = torch.arange(p0, p0 + m, device=ids.device)  # (m,)
    ropes = {base: rope_cos_sin(positions, cfg.head_dim, base, model.dtype)
             for base in (cfg.rope_base_local, cfg.rope_base_global)}  # fmt: skip
    # √D rounded to the weights' dtype, as transformers applies it (25.25 in bfloat16)
    x = F.embedding(ids, w.embed) * float(torch.tensor(math.sqrt(cfg.d_model), dtype=model.dtype))  # (1, m, D)
    records = []
    with _threads(ids.device):
        for i, lw in enumerate(w.layers):
            cos, sin = ropes[cfg.rope_base(i)]
            traced = trace or keep_input_of == i
            x, rec = _attention_layer(x, lw, cfg, i, cache, positions, cos, sin, window, traced, keep_input_of == i)
            x = _mlp(x, lw, cfg)
            if rec is not None:
                records.append(rec)
            if stop_after == i:
                break
    if cache is not None:
        cache.length = p0 + m
    return rms_norm(x, w.final_norm, cfg.rms_eps), records


def logits_of(model: Decoder, hidden: torch.Tensor) -> torch.Tensor:
    """Next-token logits ``(..., vocab)`` in float32 from final-normed hidden states ``(..., D)``."""
    cfg = model.config
    h = hidden.to(model.dtype)
    # One position: torch.mv reads the table about 15 % faster than F.linear, with the same numbers.
    one = h.dim() == 1
    with _threads(h.device):
        logits = torch.mv(model.weights.embed, h) if one else F.linear(h, model.weights.embed)  # (..., vocab)
    logits = logits.float()
    if cfg.final_softcap is not None:
        logits = torch.tanh(logits / cfg.final_softcap) * cfg.final_softcap
    return logits


def check_text(model: Decoder, text: object, *, room: int = 0) -> list[int]:
    """The ids of ``text`` (``<bos>`` first); ``ValueError`` for a non-string, an empty text, or one whose
    tokens plus ``room`` exceed ``config.max_tokens``."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("the text is empty; type at least one word")
    ids = model.tokenizer.encode(text)
    cap = model.config.max_tokens
    if len(ids) + room > cap:
        extra = f" plus {room} new tokens" if room else ""
        raise ValueError(f"the text is {len(ids)} tokens long{extra}; this model's cap here is {cap} tokens")
    return ids
