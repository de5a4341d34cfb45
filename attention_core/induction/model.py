"""A small attention-only decoder: token embeddings, attention layers with residuals, unembedding.

    x₀      = W_E[tokens]                                                   (N, L, D)
    q, k    = (x_l + W_pos[0..L)) · W_Q,  (x_l + W_pos[0..L)) · W_K         per head (N, H, L, d_k)
    x_{l+1} = x_l + concat_h softmax(q_h k_hᵀ/√d_k + causal) (x_l W_V)_h · W_O   for each layer l
    logits  = x_last · W_U                                                  (N, L, V)

No MLPs and no norms: every path from a token to a logit goes through attention, so what the model learns
is written in its attention patterns and its query-key and output-value circuits (Elhage et al. 2021).

The learned positions are added where queries and keys are made, not to the residual stream (Press et al.
2021 call this position-infused attention). A head can still attend by position (the previous-token head
does), but no head can copy a *position* forward, so the only way to find "the token after the earlier
copy" is the textbook circuit: a layer-0 head writes the previous token into each position, a layer-1
head matches against it (K-composition). With positions in the stream, a model found a second circuit
too (a head that copies the earlier copy's position forward), which no single score names.

Each layer's attention is the project's own five steps with the causal mask
(:func:`attention_core.attention_trace` when the patterns are kept, the lean
:func:`attention_core.dot_product_attention` otherwise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from ..attention import attention_trace, dot_product_attention
from ..device import new_tensor_device
from ..heads import head_size, merge_heads, split_heads
from ..validation import check_int, holds_data
from .task import check_task, seeded_generator

MAX_LAYERS = 4
MAX_D_MODEL = 512


@dataclass(frozen=True)
class InductionConfig:
    """The architecture and its task. ``half`` tokens, repeated once, fill the context of ``2·half`` positions."""

    vocab: int = 48
    half: int = 24
    d_model: int = 64
    n_heads: int = 4
    layers: int = 2

    def __post_init__(self) -> None:
        check_task(self.vocab, self.half)
        check_int("layers", self.layers, low=1, high=MAX_LAYERS)
        check_int("d_model", self.d_model, low=2, high=MAX_D_MODEL)
        head_size(self.d_model, check_int("n_heads", self.n_heads, low=1, high=16))

    @property
    def n_ctx(self) -> int:
        """The longest sequence the learned positions cover."""
        return 2 * self.half

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class LayerWeights:
    """One attention layer: ``x @ w_q`` etc., all ``(D, D)``; head h reads columns ``h·d_k … (h+1)·d_k``."""

    w_q: torch.Tensor  # (D, H·d_k)
    w_k: torch.Tensor  # (D, H·d_k)
    w_v: torch.Tensor  # (D, H·d_k)
    w_o: torch.Tensor  # (H·d_k, D)


@dataclass(frozen=True)
class InductionWeights:
    """Every parameter of the decoder, read top to bottom."""

    config: InductionConfig
    embed: torch.Tensor  # (V, D)  W_E
    pos: torch.Tensor  # (n_ctx, D)  W_pos, added to the input of W_Q and W_K
    layers: tuple[LayerWeights, ...]
    unembed: torch.Tensor  # (D, V)  W_U

    def parameters(self) -> list[torch.Tensor]:
        """Every tensor, in a fixed order (the optimiser's and the file's)."""
        return list(self.named().values())

    def named(self) -> dict[str, torch.Tensor]:
        """Stable names (as in the shipped file): ``embed``, ``pos``, ``blocks.{l}.w_q`` …, ``unembed``."""
        out = {"embed": self.embed, "pos": self.pos}
        for i, lw in enumerate(self.layers):
            out |= {f"blocks.{i}.{n}": getattr(lw, n) for n in ("w_q", "w_k", "w_v", "w_o")}
        return out | {"unembed": self.unembed}

    @classmethod
    def from_named(cls, config: InductionConfig, t: Callable[[str], torch.Tensor]) -> InductionWeights:
        """The weights whose :meth:`named` tensors ``t(name)`` gives."""
        layers = tuple(LayerWeights(*(t(f"blocks.{i}.{n}") for n in ("w_q", "w_k", "w_v", "w_o")))
                       for i in range(config.layers))  # fmt: skip
        return cls(config, t("embed"), t("pos"), layers, t("unembed"))

    @property
    def device(self) -> torch.device:
        return self.embed.device


def init_weights(config: InductionConfig, seed: int = 0, device: str | torch.device | None = None) -> InductionWeights:
    """Fresh weights from one generator seeded by ``seed``: N(0, 1) embeddings and positions, N(0, 1/D)
    projections and unembedding (so each layer's output starts about as large as its input)."""
    dev = new_tensor_device(device)
    g = seeded_generator(seed, dev)
    D, V = config.d_model, config.vocab

    def normal(*shape: int, std: float) -> torch.Tensor:
        return (torch.randn(*shape, generator=g, device=dev) * std).requires_grad_(True)

    embed = normal(V, D, std=1.0)
    pos = normal(config.n_ctx, D, std=1.0)
    layers = tuple(LayerWeights(*(normal(D, D, std=1 / math.sqrt(D)) for _ in range(4))) for _ in range(config.layers))
    return InductionWeights(config, embed, pos, layers, normal(D, V, std=1 / math.sqrt(D)))


@dataclass(frozen=True)
class InductionForward:
    """What one forward pass returns. ``patterns[l]`` is layer l's attention weights ``(N, H, L, L)``
    (``None`` unless asked for); ``head_outputs[l]`` is each head's output ``(N, H, L, d_k)`` before W_O."""

    logits: torch.Tensor  # (N, L, V)
    patterns: tuple[torch.Tensor, ...] | None
    head_outputs: tuple[torch.Tensor, ...] | None


def check_tokens(tokens: object, config: InductionConfig) -> torch.Tensor:
    """An integer tensor ``(N, L)`` with 1 ≤ L ≤ n_ctx and every entry in ``[0, vocab)``."""
    if not isinstance(tokens, torch.Tensor):
        raise ValueError(f"tokens must be a torch.Tensor, got {type(tokens).__name__}")
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must be an integer tensor, got {tokens.dtype}")
    if tokens.dim() != 2 or tokens.shape[1] < 1 or tokens.shape[0] < 1:
        raise ValueError(f"tokens must have shape (N, L) with N, L ≥ 1, got {tuple(tokens.shape)}")
    if tokens.shape[1] > config.n_ctx:
        raise ValueError(f"at most {config.n_ctx} tokens fit the model's positions, got {tokens.shape[1]}")
    if not holds_data(tokens):
        return tokens  # shapes only (meta, or torch's FakeTensorMode): there are no values to check
    lo, hi = int(tokens.min()), int(tokens.max())
    if lo < 0 or hi >= config.vocab:
        raise ValueError(f"tokens must lie in [0, {config.vocab}), got values from {lo} to {hi}")
    return tokens


def check_ablate(ablate: Iterable[tuple[int, int]], config: InductionConfig) -> frozenset[tuple[int, int]]:
    """``(layer, head)`` pairs that exist in ``config``."""
    out = set()
    for pair in ablate:
        try:
            layer, head = pair
        except (TypeError, ValueError):
            raise ValueError(f"ablate must hold (layer, head) pairs, got {pair!r}") from None
        out.add((check_int("layer", layer, low=0, high=config.layers - 1),
                 check_int("head", head, low=0, high=config.n_heads - 1)))  # fmt: skip
    return frozenset(out)


def forward(
    weights: InductionWeights, tokens: torch.Tensor, *, causal: bool = True,
    ablate: Iterable[tuple[int, int]] = (), keep: bool = False,
) -> InductionForward:  # fmt: skip
    """Run the decoder on ``tokens (N, L)`` (on the weights' device).

    ``causal=False`` lets every position read every other, the future included. ``ablate`` zeroes
    the output of each ``(layer, head)`` given (its pattern is still computed and returned).
    ``keep=True`` keeps each layer's patterns and head outputs (the explained path, more checks).
    """
    cfg = weights.config
    check_tokens(tokens, cfg)
    dead = check_ablate(ablate, cfg)
    L = tokens.shape[1]
    x = weights.embed[tokens]  # (N, L, D)
    pos = weights.pos[:L]  # (L, D): added where queries and keys are made, never to the stream (see above)
    patterns, outputs = [], []
    for i, lw in enumerate(weights.layers):
        q = split_heads((x + pos) @ lw.w_q, cfg.n_heads)  # (N, L, D) -> (N, H, L, d_k)
        k = split_heads((x + pos) @ lw.w_k, cfg.n_heads)  # (N, H, L, d_k)
        v = split_heads(x @ lw.w_v, cfg.n_heads)  # (N, H, L, d_k)
        if keep:
            trace = attention_trace(q, k, v, is_causal=causal)
            out = trace.output  # (N, H, L, d_k)
            patterns.append(trace.weights)  # (N, H, L, L)
        else:
            out = dot_product_attention(q, k, v, is_causal=causal)  # (N, H, L, d_k)
        gone = [h for (layer, h) in dead if layer == i]
        if gone:
            alive = torch.ones(cfg.n_heads, 1, 1, dtype=out.dtype, device=out.device)  # (H, 1, 1)
            alive[gone] = 0.0
            out = out * alive  # (N, H, L, d_k)
        if keep:
            outputs.append(out)
        x = x + merge_heads(out) @ lw.w_o  # (N, L, H·d_k) @ (H·d_k, D) -> (N, L, D)
    logits = x @ weights.unembed  # (N, L, D) @ (D, V) -> (N, L, V)
    return InductionForward(logits, tuple(patterns) if keep else None, tuple(outputs) if keep else None)


def half_losses(logits: torch.Tensor, tokens: torch.Tensor, half: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean cross-entropy (nats) of predicting each next token, on the first half and on the repeated half.

    The first half's targets are tokens 1 … half−1; the repeated half's are tokens half+1 … 2·half−1,
    each of which has an earlier copy to look up. (Token ``half``, the first of the repeat, is in neither:
    nothing in the context says the repeat starts there.) Returns two 0-d tensors.
    """
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # (N, L−1, V): position i predicts token i+1
    nll = -logp.gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)  # (N, L−1)
    return nll[:, : half - 1].mean(), nll[:, half:].mean()
