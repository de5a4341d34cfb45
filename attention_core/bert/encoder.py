"""The BERT encoder's forward pass in plain torch, with every attention computed by our core.

    x = LayerNorm(word[ids] + position[0..L−1] + token_type[0])          (B, L, D)
    per layer:
        Q, K, V = x W_Qᵀ + b_Q, …  split into H heads of d_head = D / H  (B, H, L, d_head)
        A = attention(Q, K, V, padding mask)    ← attention_trace or dot_product_attention
        x = LayerNorm(x + concat_heads(A) W_Oᵀ + b_O)
        x = LayerNorm(x + GELU(x W_1ᵀ + b_1) W_2ᵀ + b_2)
    sentence embedding = mean of x over the real tokens, scaled to length 1

Inference only: dropout is off, as in ``model.eval()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional as F

from ..attention import attention_trace, dot_product_attention
from ..device import one_thread
from ..heads import merge_heads, split_heads
from ..masks import padding_mask
from ..validation import any_true, check_int, holds_data
from .tokens import Batch, load_tokenizer, make_batch
from .weights import BertConfig, BertWeights, LayerWeights, load_config, load_weights, model_dir


@dataclass(frozen=True)
class Bert:
    """A loaded encoder: its config, weights (on one device) and tokenizer."""

    config: BertConfig
    weights: BertWeights
    tokenizer: Any  # tokenizers.Tokenizer

    @property
    def device(self) -> torch.device:
        return self.weights.word.device


@dataclass(frozen=True)
class LayerAttention:
    """Every head of one layer. ``q``, ``k``, ``v``, ``output``: ``(B, H, L, d_head)``;
    ``scores`` (raw QKᵀ, before ÷√d_head) and ``weights``: ``(B, H, L, L)``."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scores: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor


@dataclass(frozen=True)
class EncoderOutput:
    """``hidden_states``: the embeddings, then each layer's output, each ``(B, L, D)``;
    ``attentions``: one :class:`LayerAttention` per layer (empty when no trace was asked for);
    ``embedding``: the mean-pooled, L2-normalised sentence embedding ``(B, D)``."""

    hidden_states: tuple[torch.Tensor, ...]
    attentions: tuple[LayerAttention, ...]
    embedding: torch.Tensor


def load_bert(device: str | torch.device | None = None) -> Bert:
    """Load all-MiniLM-L6-v2 from the installed package onto ``device``."""
    path = model_dir()
    config = load_config(path)
    weights = load_weights(path, config, device=device)
    return Bert(config=config, weights=weights, tokenizer=load_tokenizer(path))


def _check_inputs(bert: Bert, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> tuple[int, ...]:
    """Validate ids and mask; return each row's real length (the mask must be right padding)."""
    cfg = bert.config
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
        raise ValueError("input_ids must be a (B, L) torch.long tensor")
    B, L = input_ids.shape
    if B == 0 or L == 0:
        raise ValueError(f"input_ids must hold at least one token, got shape {(B, L)}")
    if cfg.max_positions < L:
        raise ValueError(f"sequences are {L} tokens long; this model has {cfg.max_positions} positions")
    if input_ids.device != bert.device:
        raise ValueError(f"input_ids are on {input_ids.device} but the model is on {bert.device}")
    if any_true(input_ids < 0) or any_true(input_ids >= cfg.vocab_size):
        raise ValueError(f"every token id must lie in [0, {cfg.vocab_size})")
    if attention_mask is None:
        return (L,) * B
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
        raise ValueError(f"attention_mask must have the shape of input_ids, {(B, L)}")
    if attention_mask.device != input_ids.device:
        raise ValueError("attention_mask must be on the device of input_ids")
    mask = attention_mask.bool()
    if not holds_data(mask):  # a fake or meta mask: no lengths to read; every row taken as full
        return (L,) * B
    lengths = mask.sum(dim=1)  # (B,)
    prefix = torch.arange(L, device=mask.device).unsqueeze(0) < lengths.unsqueeze(1)  # (B, L)
    if not bool((prefix == mask).all()) or bool((lengths == 0).any()):
        raise ValueError("attention_mask must be right padding: 1s for each row's real tokens (≥ 1), then 0s")
    return tuple(int(n) for n in lengths.tolist())


def _layer(
    x: torch.Tensor, mask: torch.Tensor | None, w: LayerWeights, cfg: BertConfig, trace: bool
) -> tuple[torch.Tensor, LayerAttention | None]:
    D = x.shape[-1]
    q = split_heads(F.linear(x, w.w_q, w.b_q), cfg.n_heads)  # (B, L, D) -> (B, H, L, d_head)
    k = split_heads(F.linear(x, w.w_k, w.b_k), cfg.n_heads)  # (B, H, L, d_head)
    v = split_heads(F.linear(x, w.w_v, w.b_v), cfg.n_heads)  # (B, H, L, d_head)
    record = None
    if trace:
        tr = attention_trace(q, k, v, mask)  # scale 1/√d_head, as BERT
        ctx = tr.output  # (B, H, L, d_head)
        record = LayerAttention(q=q, k=k, v=v, scores=tr.scores, weights=tr.weights, output=ctx)
    else:
        ctx = dot_product_attention(q, k, v, mask)  # (B, H, L, d_head)
    ctx = merge_heads(ctx)  # (B, H, L, d_head) -> (B, L, D): heads side by side
    x = F.layer_norm(x + F.linear(ctx, w.w_o, w.b_o), (D,), w.ln1_w, w.ln1_b, cfg.layer_norm_eps)  # (B, L, D)
    h = F.gelu(F.linear(x, w.w_ff1, w.b_ff1))  # (B, L, d_ff), exact (erf) GELU as BERT's "gelu"
    x = F.layer_norm(x + F.linear(h, w.w_ff2, w.b_ff2), (D,), w.ln2_w, w.ln2_b, cfg.layer_norm_eps)  # (B, L, D)
    return x, record


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``hidden (B, L, D)`` over the real tokens of ``attention_mask (B, L)``, L2-normalised → ``(B, D)``."""
    m = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, L, 1)
    pooled = (hidden * m).sum(dim=1) / m.sum(dim=1).clamp_min(1e-9)  # (B, D)
    return F.normalize(pooled, p=2.0, dim=-1)  # (B, D)


def bert_forward(
    bert: Bert, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *, trace: bool = True
) -> EncoderOutput:
    """Run the encoder on ``input_ids (B, L)`` with a right-padding ``attention_mask (B, L)``.

    With ``trace`` every layer's Q, K, V, scores and weights are kept (:func:`attention_trace`); without
    it the lean :func:`dot_product_attention` runs. On the CPU it runs on one intra-op thread (16 tokens on
    2 loaded cores: 2 threads 50–1200 ms, 1 thread 12–45 ms).
    """
    lengths = _check_inputs(bert, input_ids, attention_mask)
    cfg, w = bert.config, bert.weights
    L, dev = input_ids.shape[1], input_ids.device
    real = padding_mask(lengths, L, device=dev)  # (B, 1, L): True for the real tokens
    keys_ok = real.unsqueeze(1) if min(lengths) < L else None  # (B, 1, 1, L): padded keys blocked for every query
    with torch.inference_mode(), one_thread(dev):
        x = w.word[input_ids] + w.position[torch.arange(L, device=dev)] + w.token_type[0]  # (B, L, D): type 0
        x = F.layer_norm(x, (cfg.d_model,), w.ln_w, w.ln_b, cfg.layer_norm_eps)  # (B, L, D)
        hidden, attentions = [x], []
        for layer in w.layers:
            x, record = _layer(x, keys_ok, layer, cfg, trace)
            hidden.append(x)
            if record is not None:
                attentions.append(record)
        return EncoderOutput(tuple(hidden), tuple(attentions), mean_pool(x, real[:, 0]))


def encode(bert: Bert, texts: Sequence[str], *, trace: bool = True) -> tuple[Batch, EncoderOutput]:
    """Tokenise ``texts`` (padded to the longest) and run the encoder; ``ValueError`` for bad text."""
    batch = make_batch(bert.tokenizer, texts, pad_id=bert.config.pad_id, device=bert.device)
    return batch, bert_forward(bert, batch.input_ids, batch.attention_mask, trace=trace)


def head_projections(bert: Bert, layer: int, head: int) -> dict[str, torch.Tensor]:
    """One head's slice of the Q, K, V projections, oriented for ``x @ W + b``:
    ``w_q, w_k, w_v (D, d_head)`` and ``b_q, b_k, b_v (d_head,)``."""
    cfg = bert.config
    layer = check_int("layer", layer, low=0, high=cfg.n_layers - 1)
    head = check_int("head", head, low=0, high=cfg.n_heads - 1)
    lw, dh = bert.weights.layers[layer], cfg.d_head
    rows = slice(head * dh, (head + 1) * dh)  # the head's output features
    return {
        "w_q": lw.w_q[rows].T, "b_q": lw.b_q[rows],  # (D, d_head), (d_head,)
        "w_k": lw.w_k[rows].T, "b_k": lw.b_k[rows],
        "w_v": lw.w_v[rows].T, "b_v": lw.b_v[rows],
    }  # fmt: skip
