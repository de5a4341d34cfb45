"""A trained model's attention with one layer's softmax swapped for an efficient route.

The model is the app's all-MiniLM-L6-v2 (:mod:`attention_core.bert`). For a sentence, the
chosen layer's own Q, K and V (every head) go through a variant (:mod:`.variants`) instead of
softmax attention, and the layer's attention output and weights are compared with the exact
ones. The later layers are not rerun: the numbers say what the swap does to that layer.

:meth:`LayerSwap.attends_most` answers the page's question, e.g. whether "it" still attends
most to "animal": per head, the key that takes the most weight from the query, not counting
[CLS], [SEP] and the query itself (the rule of :func:`attention_core.bert.strongest_links_all`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..bert import Bert, LayerAttention, encode
from ..validation import check_int
from .accuracy import Accuracy, compare
from .variants import VariantOutput, variant_attention


@dataclass(frozen=True)
class AttendsMost:
    """Per head, the key ``query`` looks at most (module docstring) under exact attention and under the
    variant; ``-1`` for a head whose variant has no weights."""

    query: int
    key: int
    exact_top: tuple[int, ...]
    variant_top: tuple[int, ...]

    @property
    def exact_heads(self) -> int:
        """Heads in which the query attends most to ``key`` under exact attention."""
        return sum(t == self.key for t in self.exact_top)

    @property
    def variant_heads(self) -> int:
        """Heads in which it still does under the variant."""
        return sum(t == self.key for t in self.variant_top)


@dataclass(frozen=True)
class LayerSwap:
    """A layer run with a variant in place of softmax attention, against the exact layer, for one sentence.

    ``exact``: the layer as the model ran it, every head (batch of one); ``swapped``: the variant's attention
    output ``(1, H, L, d_head)`` and weights ``(1, H, L, L)``. ``accuracy`` covers every head (``kl`` is ``(1, H, L)``).
    """

    tokens: tuple[str, ...]
    exact: LayerAttention
    swapped: VariantOutput
    accuracy: Accuracy

    def attends_most(self, query: str, key: str) -> AttendsMost:
        """Per head, whether ``query`` attends most to ``key`` (each at its first occurrence), exactly and under
        the variant."""
        for token in (query, key):
            if token not in self.tokens:
                raise ValueError(f"{token!r} is not one of the tokens {list(self.tokens)}")
        qi, ki = self.tokens.index(query), self.tokens.index(key)
        n = len(self.tokens)
        candidates = torch.ones(n, dtype=torch.bool)
        candidates[[0, n - 1, qi]] = False  # never [CLS], [SEP] or the token itself
        if not bool(candidates[ki]):
            raise ValueError(f"{self.tokens[ki]!r} at {ki} is [CLS], [SEP] or the query itself: not a candidate")

        def top(w: torch.Tensor) -> tuple[int, ...]:
            row = w[0, :, qi, :].detach().to("cpu", torch.float64).masked_fill(~candidates, -1.0)  # (H, L)
            return tuple(int(i) for i in row.argmax(dim=-1))

        exact, swapped = self.exact.weights, self.swapped.weights  # (1, H, L, L); swapped None: the variant has none
        return AttendsMost(qi, ki, top(exact), (-1,) * exact.shape[1] if swapped is None else top(swapped))


def swap_layer(bert: Bert, text: str, layer: int, variant: str, **params: object) -> LayerSwap:
    """Layer ``layer`` of the model on ``text`` with ``variant`` (parameters as
    :func:`.variants.variant_attention`, e.g. ``window=4``) in place of softmax attention."""
    layer = check_int("layer", layer, low=0, high=bert.config.n_layers - 1)
    batch, out = encode(bert, [text], trace=True)
    exact = out.attentions[layer]
    with torch.inference_mode():
        result = variant_attention(exact.q, exact.k, exact.v, variant, **params)  # type: ignore[arg-type]
    accuracy = compare(result.output, exact.output, result.weights, exact.weights, note=result.note)
    return LayerSwap(batch.items[0].tokens, exact, result, accuracy)
