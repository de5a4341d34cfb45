"""One prompt through the decoder with every layer's attention kept, and one head's five steps.

:func:`run_decoder` is what the page reads: tokens, next-token logits, and per layer the four query
heads' weights ``(1, 4, n, n)`` with the Q, K, V they came from. :func:`head_trace` gives one head's
:class:`~attention_core.attention.AttentionTrace` (scores, scaled, masked, weights, output), and
:func:`head_inputs` the X and W that head's Q, K, V start from, for the walkthrough.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F

from ..attention import AttentionTrace, attention_trace
from ..validation import check_int
from .model import Decoder, LayerAttention, check_text, decoder_mask, forward, logits_of


@dataclass(frozen=True)
class DecoderRun:
    """A prompt's forward pass.

    ``tokens``: the pieces as text (``<bos>`` first; SentencePiece's ``▁`` shown as a space, byte pieces as
    ``<0xE2>``); ``ids``; ``logits``: float32 ``(rows, vocab)``, the last position only (``rows = 1``) unless
    :func:`run_decoder` was asked for all (``rows = n``; 1 MB per token); ``attentions``: one per layer.
    """

    tokens: list[str]
    ids: list[int]
    logits: torch.Tensor
    attentions: list[LayerAttention]

    def next_token_probs(self, temperature: float = 1.0) -> torch.Tensor:
        """softmax(logits of the last position / T) ``(vocab,)``, float32; T = 0 gives the argmax one-hot."""
        return probabilities(self.logits[-1], temperature)


def probabilities(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(``logits`` / T) over the last axis; T = 0: one-hot on the argmax. ``ValueError`` for T < 0."""
    t = check_temperature(temperature)
    if t == 0.0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(torch.float32)
    return torch.softmax(logits.float() / t, dim=-1)


def check_temperature(temperature: object) -> float:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise ValueError(f"temperature must be a number ≥ 0, got {temperature!r}")
    t = float(temperature)
    if not (0.0 <= t < float("inf")):
        raise ValueError(f"temperature must be a finite number ≥ 0 (0 = always the likeliest token), got {t}")
    return t


def run_decoder(model: Decoder, text: str, *, sliding_window: bool = True, all_logits: bool = False) -> DecoderRun:
    """Tokenise ``text`` and run it with every layer's attention kept (the traced five steps).

    ``sliding_window=False`` lets the local layers see every earlier token, as the global ones do.
    ``all_logits`` keeps every position's logits (1 MB per token) instead of the last one's.
    ``ValueError`` for a non-string or empty text, or one longer than ``config.max_tokens`` tokens.
    """
    ids = check_text(model, text)
    x = torch.tensor([ids], device=model.device)  # (1, n)
    with torch.inference_mode():
        hidden, records = forward(model, x, trace=True, window=bool(sliding_window))  # (1, n, D)
        logits = (
            logits_of(model, hidden[0]) if all_logits else logits_of(model, hidden[0, -1]).unsqueeze(0)
        )  # (rows, vocab)
    return DecoderRun(model.tokenizer.token_strings(ids), ids, logits, records)


def head_inputs(model: Decoder, text: str, layer: int, head: int, *, sliding_window: bool = True) -> dict:
    """The walkthrough's step 0 for query head ``head`` of ``layer``, float32 on the model's device:

    ``tokens``; ``x (n, D)`` the layer's input after its pre-attention RMS norm; ``w_q (D, d)`` the head's
    slice of W_Q, ``w_k``, ``w_v (D, d)`` its shared K/V head's (so ``x @ w_q`` is Q before QK-norm and
    RoPE); ``q``, ``k``, ``v (n, d)`` as the attention used them; ``scale``; ``mask (n, n)`` bool.
    """
    cfg = model.config
    layer = check_int("layer", layer, low=0, high=cfg.n_layers - 1)
    head = check_int("head", head, low=0, high=cfg.n_heads - 1)
    ids = check_text(model, text)
    x = torch.tensor([ids], device=model.device)  # (1, n): made before inference mode, as run_decoder does
    with torch.inference_mode():
        _, records = forward(model, x, window=bool(sliding_window), keep_input_of=layer, stop_after=layer)
    rec = records[-1]
    h, g, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    kv = head // (h // g)  # the K/V head this query head reads
    w = model.weights.layers[layer].w_qkv.float()  # (h·d + 2·g·d, D)
    window = None if cfg.is_global(layer) or not sliding_window else cfg.window
    assert rec.x is not None
    return {
        "tokens": model.tokenizer.token_strings(ids),
        "x": rec.x[0],  # (n, D)
        "w_q": w[head * d : (head + 1) * d].T,  # (D, d)
        "w_k": w[h * d + kv * d : h * d + (kv + 1) * d].T,  # (D, d)
        "w_v": w[(h + g) * d + kv * d : (h + g) * d + (kv + 1) * d].T,  # (D, d)
        "q": rec.q[0, head],  # (n, d)
        "k": rec.k[0, kv],  # (n, d)
        "v": rec.v[0, kv],  # (n, d)
        "scale": cfg.scale,
        "mask": decoder_mask(len(ids), len(ids), window=window, device=model.device)
        if len(ids) > 1 else torch.ones(1, 1, dtype=torch.bool, device=model.device),
    }  # fmt: skip


def head_trace(model: Decoder, text: str, layer: int, head: int, *, sliding_window: bool = True) -> AttentionTrace:
    """The five steps of one query head on ``text``: :func:`~attention_core.attention.attention_trace` on the
    head's real Q, K, V ``(n, d)`` with the model's causal (+ window) mask and scale; ``weights`` equals
    ``run_decoder(model, text).attentions[layer].weights[0, head]``."""
    h = head_inputs(model, text, layer, head, sliding_window=sliding_window)
    return attention_trace(h["q"], h["k"], h["v"], h["mask"], scale=h["scale"])
