"""A tiny random Gemma-shaped decoder for tests: no file, no reference library, built in milliseconds.

Shared by tests/test_decoder_core.py (the forward, cache and window against hand-made references) and
tests/test_fake_cuda.py (every decoder entry point on a data-less device).
"""

from __future__ import annotations

import torch

from attention_core.decoder import Decoder, DecoderConfig
from attention_core.decoder.tokenizer import GemmaTokenizer
from attention_core.decoder.weights import DecoderWeights, LayerWeights

PIECES = ["<pad>", "<eos>", "<bos>", "<unk>", "\u2581"] + [chr(97 + i) for i in range(26)] + ["ab", "abc", "\u2581a"]
TYPES = [3, 3, 3, 2] + [1] * (len(PIECES) - 4)


def tiny(*, n_kv_heads: int = 1, window: int = 4, seed: int = 0, device: str | torch.device = "cpu") -> Decoder:
    """Six layers (layer 5 global), 4 query heads of size 8, a window of ``window`` tokens, random weights
    drawn on the CPU from ``seed`` and moved to ``device``."""
    h, d, D, F_ = 4, 8, 16, 32
    cfg = DecoderConfig(
        n_layers=6, d_model=D, n_heads=h, n_kv_heads=n_kv_heads, head_dim=d, d_ff=F_, window=window,
        vocab_size=len(PIECES), query_pre_attn_scalar=float(d), max_tokens=48,
    )  # fmt: skip
    g = torch.Generator().manual_seed(seed)

    def w(*shape: int) -> torch.Tensor:
        return (0.4 * torch.randn(*shape, generator=g)).to(device)

    def gain(n: int) -> torch.Tensor:
        return (1 + 0.2 * torch.randn(n, generator=g)).to(device)

    layers = tuple(
        LayerWeights(
            attn_norm=gain(D),
            w_qkv=w(h * d + 2 * n_kv_heads * d, D),
            q_norm=gain(d),
            k_norm=gain(d),
            w_o=w(D, h * d),
            post_attn_norm=gain(D),
            ffn_norm=gain(D),
            w_gate_up=w(2 * F_, D),
            w_down=w(D, F_),
            post_ffn_norm=gain(D),
        )
        for _ in range(cfg.n_layers)
    )
    weights = DecoderWeights(embed=w(cfg.vocab_size, D), final_norm=gain(D), layers=layers)
    return Decoder(cfg, weights, GemmaTokenizer(PIECES, TYPES, bos_id=2, eos_id=1, unk_id=3))


def ids_of(n: int, seed: int = 1) -> torch.Tensor:
    """``(1, n)`` token ids: ``<bos>``, then ``n − 1`` random ordinary pieces."""
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.tensor([2]), torch.randint(4, len(PIECES), (n - 1,), generator=g)]).unsqueeze(0)  # (1, n)
