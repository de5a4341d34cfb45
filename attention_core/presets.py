"""Inputs for the walkthrough: token labels, X, the projections, and Q, K, V, one function per preset.

``tiny`` (small integers to check by hand), ``sentence`` (the animal sentence, seeded embeddings),
``random`` (seeded Gaussians of a chosen size), ``model`` (one head of the pretrained encoder
all-MiniLM-L6-v2) and ``decoder`` (one query head of the pretrained decoder gemma-3-270m). The first
three have a cross-attention variant whose queries come from a second sequence (so n_q ≠ n_k).
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from dataclasses import dataclass

import torch

from .bert import Bert, encode, head_projections, load_bert
from .device import new_tensor_device
from .layers import project_qkv, sinusoidal_positions
from .validation import check_int, check_ints

PRESETS = ("tiny", "sentence", "random", "model", "decoder")
MAX_TOKENS = 16
MAX_DIM = 64

SENTENCE = ["The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired"]
# A French rendering for the cross-attention variant: 13 query tokens over 11 keys.
SENTENCE_FR = ["L'", "animal", "n'", "a", "pas", "traversé", "la", "rue", "car", "il", "était", "trop", "fatigué"]
MODEL_TEXT = "The animal didn't cross the street because it was too tired."
MODEL_LAYER, MODEL_HEAD = 3, 1  # the head that links "it" to "animal" in MODEL_TEXT
DECODER_LAYER, DECODER_HEAD = 5, 0  # gemma-3-270m's first global layer
DECODER_MAX_TOKENS = 128  # the walkthrough writes every number of a head's n × n matrices


@dataclass(frozen=True)
class WalkthroughInputs:
    """Everything step 0 shows. Shapes: ``x_q (L, d_model)``, ``x_kv (S, d_model)``,
    ``w_q, w_k (d_model, d_k)``, ``w_v (d_model, d_v)``, ``q (L, d_k)``, ``k (S, d_k)``,
    ``v (S, d_v)``."""

    name: str
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    x_q: torch.Tensor
    x_kv: torch.Tensor
    w_q: torch.Tensor
    w_k: torch.Tensor
    w_v: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    positions: bool
    unknown: tuple[str, ...] = ()  # the model preset: words outside its vocabulary, read as [UNK]

    @property
    def n_q(self) -> int:
        return len(self.query_tokens)

    @property
    def n_k(self) -> int:
        return len(self.key_tokens)

    @property
    def d_model(self) -> int:
        return int(self.x_q.shape[-1])

    @property
    def d_k(self) -> int:
        return int(self.q.shape[-1])

    @property
    def d_v(self) -> int:
        return int(self.v.shape[-1])


def _finish(
    name: str, q_tokens: list[str], k_tokens: list[str], x_q: torch.Tensor, x_kv: torch.Tensor,
    w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor,
    *, positions: bool, device: str | torch.device | None, unknown: tuple[str, ...] = (),
) -> WalkthroughInputs:  # fmt: skip
    """Add the positions, move to ``device`` and project: the inputs of every preset made from X and the W's."""
    dev = new_tensor_device(device)
    if positions:
        x_q = x_q + sinusoidal_positions(x_q.shape[0], x_q.shape[1], device=x_q.device)  # (L, d_model)
        x_kv = x_kv + sinusoidal_positions(x_kv.shape[0], x_kv.shape[1], device=x_kv.device)  # (S, d_model)
    x_q, x_kv, w_q, w_k, w_v = (t.to(dev) for t in (x_q, x_kv, w_q, w_k, w_v))
    q, _, _ = project_qkv(x_q, w_q, w_k, w_v)  # (L, d_k)
    _, k, v = project_qkv(x_kv, w_q, w_k, w_v)  # (S, d_k), (S, d_v)
    return WalkthroughInputs(
        name=name, query_tokens=tuple(_unique(q_tokens)), key_tokens=tuple(_unique(k_tokens)),
        x_q=x_q, x_kv=x_kv, w_q=w_q, w_k=w_k, w_v=w_v, q=q, k=k, v=v, positions=positions, unknown=unknown,
    )  # fmt: skip


def _unique(tokens: list[str]) -> list[str]:
    """Plot axes need distinct labels: a repeated word gets a position suffix ("the·4")."""
    seen = Counter(tokens)
    return [f"{t}·{i}" if seen[t] > 1 else t for i, t in enumerate(tokens)]


def tiny_example(
    *, positions: bool = False, cross: bool = False, device: str | torch.device | None = None
) -> WalkthroughInputs:
    """3 tokens, d_model = 4, d_k = d_v = 2, every number a small integer (without positions)."""
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]])  # (3, 4)
    w_q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])  # (4, 2)
    w_k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]])  # (4, 2)
    w_v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])  # (4, 2)
    tokens = ["I", "love", "cats"]
    x_q, q_tokens = x, tokens
    if cross:
        x_q = torch.tensor([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # (2, 4)
        q_tokens = ["J'", "aime"]
    return _finish("tiny", q_tokens, tokens, x_q, x, w_q, w_k, w_v, positions=positions, device=device)


# Hand-set shared features: each word in a group gets that group's direction with its own
# strength, so "it" (a weak member) finds "animal" (a strong one) more alike than itself.
_GROUPS: tuple[dict[str, float], ...] = (
    {"animal": 3.0, "it": 1.6, "tired": 1.2, "animal·1": 3.0, "il": 1.6, "fatigué": 1.2},
    {"street": 3.0, "cross": 1.5, "rue": 3.0, "traversé": 1.5},
    {"the": 1.0, "l'": 1.0, "la": 1.0},
)


def sentence_example(
    *, d_model: int = 16, d_k: int = 8, d_v: int = 8, seed: int = 0, positions: bool = True, cross: bool = False,
    device: str | torch.device | None = None,
) -> WalkthroughInputs:  # fmt: skip
    """The animal sentence with seeded word vectors and a seeded projection."""
    d_model = check_int("d_model", d_model, low=4, high=MAX_DIM)
    d_k, d_v = check_ints(d_k=d_k, d_v=d_v, low=1, high=MAX_DIM)
    seed = check_int("seed", seed, low=0, high=2**31 - 1)
    group_dirs = torch.eye(d_model)[: len(_GROUPS)]  # (G, d_model)

    def embed(words: list[str]) -> torch.Tensor:
        seeds = [seed * 1_000_003 + zlib.crc32(w.lower().encode()) for w in words]  # one generator per word
        noise = torch.stack([0.6 * torch.randn(d_model, generator=torch.Generator().manual_seed(s)) for s in seeds])
        strength = torch.tensor([[group.get(w.lower(), 0.0) for group in _GROUPS] for w in words])  # (n, G)
        return noise + strength @ group_dirs  # (n, d_model) + (n, G) @ (G, d_model)

    g = torch.Generator().manual_seed(seed)
    # W_q and W_k share a part, so q·k rewards similar words; the rest is noise.
    # ... and the group features pass straight through, so q·k is large within a group.
    shared = 0.5 * torch.randn(d_model, d_k, generator=g) / math.sqrt(d_model)  # (d_model, d_k)
    n_pass = min(len(_GROUPS), d_k)
    shared[:n_pass, :n_pass] += torch.eye(n_pass)
    w_q = shared + 0.3 * torch.randn(d_model, d_k, generator=g) / math.sqrt(d_model)
    w_k = shared + 0.3 * torch.randn(d_model, d_k, generator=g) / math.sqrt(d_model)
    w_v = torch.randn(d_model, d_v, generator=g) / math.sqrt(d_model)
    keys = SENTENCE
    queries = SENTENCE_FR if cross else SENTENCE
    return _finish(
        "sentence", queries, keys, embed(queries), embed(keys), w_q, w_k, w_v,
        positions=positions, device=device,
    )


def random_example(
    *, n: int = 6, d_model: int = 8, d_k: int = 4, d_v: int = 4, seed: int = 0, positions: bool = False,
    cross: bool = False, device: str | torch.device | None = None,
) -> WalkthroughInputs:  # fmt: skip
    """Seeded Gaussian X and projections. With ``cross``, n − 2 queries (2 for n = 1, at least 1)."""
    n = check_int("n", n, low=1, high=MAX_TOKENS)
    d_model, d_k, d_v = check_ints(d_model=d_model, d_k=d_k, d_v=d_v, low=1, high=MAX_DIM)
    seed = check_int("seed", seed, low=0, high=2**31 - 1)
    n_q = max(1, n - 2) if n > 1 else 2
    g = torch.Generator().manual_seed(seed)
    x_kv = torch.randn(n, d_model, generator=g)  # (S, d_model)
    x_q = torch.randn(n_q, d_model, generator=g) if cross else x_kv  # (L, d_model)
    w_q = torch.randn(d_model, d_k, generator=g) / math.sqrt(d_model)  # (d_model, d_k)
    w_k = torch.randn(d_model, d_k, generator=g) / math.sqrt(d_model)  # (d_model, d_k)
    w_v = torch.randn(d_model, d_v, generator=g) / math.sqrt(d_model)  # (d_model, d_v)
    k_tokens = [f"t{i}" for i in range(n)]
    q_tokens = [f"y{i}" for i in range(n_q)] if cross else k_tokens
    return _finish(
        "random", q_tokens, k_tokens, x_q, x_kv, w_q, w_k, w_v, positions=positions, device=device
    )


NO_CROSS = "{} only has self-attention, so there is no cross-attention to show; pick another mask"


def model_example(
    *, text: str = MODEL_TEXT, layer: int = MODEL_LAYER, head: int = MODEL_HEAD, cross: bool = False,
    model: Bert | None = None, device: str | torch.device | None = None,
) -> WalkthroughInputs:  # fmt: skip
    """One head of all-MiniLM-L6-v2 on ``text``: X is that layer's input (the hidden states), the
    W's are the head's slices of the trained projections, and d_k = d_v = 32.

    BERT's projections have biases (Q = X W_Q + b_Q). To keep step 0's Q = X W_Q exact, X gets a
    last column of 1s and each W a last row holding the bias. Pass a loaded ``model`` to avoid
    reading the weights again (otherwise they are loaded onto ``device``).
    """
    if cross:
        raise ValueError(NO_CROSS.format("all-MiniLM-L6-v2, an encoder,"))
    bert = model if model is not None else load_bert(device=device)
    p = head_projections(bert, layer, head)  # validates layer and head
    batch, out = encode(bert, [text], trace=False)  # validates the text
    x = out.hidden_states[layer][0]  # (L, D): what this layer reads
    x1 = torch.cat([x, torch.ones(x.shape[0], 1, device=x.device)], dim=1)  # (L, D + 1)

    def with_bias(name: str) -> torch.Tensor:
        return torch.cat([p[f"w_{name}"], p[f"b_{name}"].unsqueeze(0)], dim=0)  # (D + 1, d_head)

    tokens = list(batch.items[0].tokens)
    return _finish(
        "model", tokens, tokens, x1, x1, with_bias("q"), with_bias("k"), with_bias("v"),
        positions=False, device=device if model is None else x.device,
        unknown=tuple(batch.items[0].unknown),
    )


def decoder_example(
    *, text: str = MODEL_TEXT, layer: int = DECODER_LAYER, head: int = DECODER_HEAD, cross: bool = False,
    model: object | None = None, device: str | torch.device | None = None,
) -> WalkthroughInputs:  # fmt: skip
    """One query head of gemma-3-270m on ``text`` (``<bos>`` first, at most :data:`DECODER_MAX_TOKENS` tokens).

    X is what the layer's attention reads (the residual stream after its RMSNorm), W_Q this head's slice of the
    query projection, W_K and W_V the layer's one key/value head, which its four query heads share (d_k = d_v =
    256, no biases). Q and K are the ones the scores use: X·W, then RMS-normalised (QK-norm) and rotated by
    position (RoPE), so here Q ≠ X·W_Q. Pass a loaded ``model`` to avoid loading it again.
    """
    if cross:
        raise ValueError(NO_CROSS.format("gemma-3-270m, a decoder,"))
    from .decoder import head_inputs, load_decoder

    dec = model if model is not None else load_decoder(device=device)
    n = len(dec.tokenizer.encode(text)) if text.strip() else 0
    if n > DECODER_MAX_TOKENS:
        raise ValueError(f"the walkthrough shows at most {DECODER_MAX_TOKENS} tokens of a decoder, got {n}")
    h = head_inputs(dec, text, layer, head)  # validates the text, the layer and the head
    tokens = list(h["tokens"])
    return WalkthroughInputs(
        name="decoder", query_tokens=tuple(_unique(tokens)), key_tokens=tuple(_unique(tokens)),
        x_q=h["x"], x_kv=h["x"], w_q=h["w_q"], w_k=h["w_k"], w_v=h["w_v"], q=h["q"], k=h["k"], v=h["v"],
        positions=False,
    )  # fmt: skip
