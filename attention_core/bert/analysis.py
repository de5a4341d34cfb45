"""Readings of a trained model's attention: where one token looks, attention sinks, coreference.

Every function takes the weights of ONE unpadded sentence, ``(n_layers, H, L, L)``, as
:func:`sentence_weights` returns them, so the numbers are the ones drawn on the page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..attention import row_entropy
from ..validation import check_int, check_tensor
from .encoder import Bert, encode


def sentence_weights(bert: Bert, text: str) -> tuple[tuple[str, ...], torch.Tensor]:
    """The tokens of ``text`` and every head's weights, ``(n_layers, H, L, L)``, on the model's device."""
    batch, out = encode(bert, [text], trace=True)
    w = torch.stack([a.weights[0] for a in out.attentions])  # n_layers × (H, L, L) -> (n_layers, H, L, L)
    return batch.items[0].tokens, w


def _check_weights(weights: torch.Tensor) -> torch.Tensor:
    check_tensor("weights", weights, min_dim=4)
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be (n_layers, H, L, L), got {tuple(weights.shape)}")
    return weights


def sink_shares(weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean share of each head's attention (over all query rows) on the first token ([CLS]) and on
    the last ([SEP]). Returns two ``(n_layers, H)`` tensors."""
    w = _check_weights(weights)
    return w[..., 0].mean(dim=-1), w[..., -1].mean(dim=-1)  # (n_layers, H, L) -> (n_layers, H)


def entropy_share(weights: torch.Tensor) -> torch.Tensor:
    """Mean row entropy of each head as a share of its maximum, log L: 1 = spread evenly over every
    token, 0 = all weight on one token. Returns ``(n_layers, H)``."""
    w = _check_weights(weights)
    n = w.shape[-1]
    if n < 2:
        raise ValueError("entropy as a share of log L needs at least 2 tokens")
    return row_entropy(w).mean(dim=-1) / math.log(n)  # (n_layers, H, L) -> (n_layers, H)


def strongest_links_all(weights: torch.Tensor, k: int = 3) -> list[list[tuple[int, int, int, float]]]:
    """For each query token, the ``k`` heads that put the most weight on one other real token (not itself,
    not the first [CLS] nor the last [SEP]): ``(layer, head, key, weight)``, strongest first."""
    w = _check_weights(weights).detach().cpu().numpy()  # (n_layers, H, L, L): tiny, so numpy
    k = check_int("k", k, low=1)
    n_layers, n_heads, n, _ = w.shape
    rows = w.reshape(n_layers * n_heads, n, n).copy()  # (heads, L queries, L keys)
    rows[:, :, 0] = -np.inf  # never [CLS] …
    rows[:, :, n - 1] = -np.inf  # … nor [SEP] …
    rows[:, np.arange(n), np.arange(n)] = -np.inf  # … nor the token itself
    where = rows.argmax(axis=-1)  # (heads, L): each head's favourite key for each query
    best = np.take_along_axis(rows, where[..., None], axis=-1)[..., 0]  # (heads, L)
    out = []
    for q in range(n):
        order = [i for i in np.argsort(-best[:, q], kind="stable")[:k] if np.isfinite(best[i, q])]
        out.append([(int(i) // n_heads, int(i) % n_heads, int(where[i, q]), float(best[i, q])) for i in order])
    return out


@dataclass(frozen=True)
class HeadReading:
    """One head on a coreference pair: the pronoun's weight on each candidate, in both sentences."""

    layer: int
    head: int
    a_right: float  # sentence A: weight on A's referent
    a_wrong: float  # sentence A: weight on the other noun
    b_right: float  # sentence B: weight on B's referent
    b_wrong: float

    @property
    def resolves(self) -> bool:
        """It picks the right noun in both sentences, so it follows the meaning, not one noun."""
        return self.a_right > self.a_wrong and self.b_right > self.b_wrong

    @property
    def margin(self) -> float:
        """The smaller of the two leads (negative when it gets a sentence wrong)."""
        return min(self.a_right - self.a_wrong, self.b_right - self.b_wrong)


def _index(tokens: tuple[str, ...], word: str, what: str) -> int:
    if word not in tokens:
        raise ValueError(f"{what} {word!r} is not one of the tokens {list(tokens)}")
    return tokens.index(word)


def coreference_pair(
    a: tuple[tuple[str, ...], torch.Tensor], b: tuple[tuple[str, ...], torch.Tensor],
    *, pronoun: str, a_referent: str, b_referent: str,
) -> tuple[HeadReading, ...]:  # fmt: skip
    """Every head's weight from ``pronoun`` on the two nouns in a Winograd-style pair of sentences ``a`` and ``b``
    (each ``(tokens, weights (n_layers, H, L, L))``), best margin first. In ``a`` the pronoun means ``a_referent``,
    in ``b`` it means ``b_referent``; each sentence must contain both nouns."""
    rows = []
    for (tokens, weights), right, wrong in ((a, a_referent, b_referent), (b, b_referent, a_referent)):
        _check_weights(weights)
        i = _index(tokens, pronoun, "the pronoun")
        row = weights[..., i, :].detach().to("cpu", torch.float64)  # (n_layers, H, L)
        rows += [row[..., _index(tokens, right, "the referent")], row[..., _index(tokens, wrong, "the noun")]]
    if rows[0].shape != rows[2].shape:
        raise ValueError("both sentences must come from the same model (same layers and heads)")
    readings = [HeadReading(*lh, *(float(r[lh]) for r in rows)) for lh in np.ndindex(*rows[0].shape)]
    return tuple(sorted(readings, key=lambda h: h.margin, reverse=True))
