"""The task that makes an induction head worth learning: random tokens, then the same tokens again.

Each sequence is ``half`` distinct tokens drawn at random from a vocabulary of ``vocab``, followed by
the same ``half`` tokens in the same order. The first half cannot be predicted (the best loss is
about ln(vocab)); the second half can, by anyone who looks back for the current token, finds what
followed it, and copies that: the induction algorithm.
"""

from __future__ import annotations

import torch

from ..device import new_tensor_device
from ..validation import check_int

MAX_VOCAB = 4096
MAX_HALF = 256


def check_task(vocab: object, half: object) -> tuple[int, int]:
    """``(vocab, half)`` as ints; ``ValueError`` unless ``2 ≤ half ≤ vocab`` (a half holds distinct tokens)."""
    vocab = check_int("vocab", vocab, low=2, high=MAX_VOCAB)
    half = check_int("half", half, low=2, high=MAX_HALF)
    if half > vocab:
        raise ValueError(f"half ({half}) must be ≤ vocab ({vocab}): a half holds {half} distinct tokens")
    return vocab, half


def seeded_generator(seed: object, device: torch.device) -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded with ``seed`` (an integer in [0, 2³²)); a CPU one for ``meta``,
    where torch has no generator and a draw holds no values to seed."""
    g = torch.Generator(device="cpu" if device.type == "meta" else device)
    g.manual_seed(check_int("seed", seed, low=0, high=2**32 - 1))
    return g


def repeated_tokens(
    batch: int, half: int, vocab: int, *, generator: torch.Generator | None = None,
    device: str | torch.device | None = None,
) -> torch.Tensor:  # fmt: skip
    """``batch`` sequences of ``half`` distinct random tokens repeated once: int64 ``(batch, 2·half)``.

    Row b is ``[t_0 … t_{half−1}, t_0 … t_{half−1}]``. The same ``generator`` state gives the same
    tokens; the tensor lands on ``device`` when given, else on the generator's device (else torch's default).
    """
    batch = check_int("batch", batch, low=1, high=1 << 16)
    vocab, half = check_task(vocab, half)
    dev = generator.device if generator is not None and device is None else new_tensor_device(device)
    keys = torch.rand(batch, vocab, generator=generator, device=dev)  # (B, V): a random order per row
    first = keys.argsort(dim=-1)[:, :half]  # (B, half): the first `half` of a random permutation
    return torch.cat([first, first], dim=-1)  # (B, 2·half)


def tokens_from_words(text: str, vocab: int, max_len: int = MAX_HALF * 2) -> tuple[list[int], list[str]]:
    """A viewer's own sequence: each different word of ``text`` becomes its own token id, the same word the same id.

    The ids are the first ones of a fixed shuffle of ``range(vocab)`` (the model learned every id alike, from
    random sequences, so which ids does not matter; a shuffle just avoids 0, 1, 2…). Returns ``(ids, words)``.
    ``ValueError`` when there is no word, more than ``max_len`` words, or more different words than ``vocab``.
    """
    vocab = check_int("vocab", vocab, low=2, high=MAX_VOCAB)
    max_len = check_int("max_len", max_len, low=1)
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    words = text.split()
    if not words:
        raise ValueError("type at least one word")
    if len(words) > max_len:
        raise ValueError(f"the model's positions hold {max_len} tokens; the text has {len(words)} words")
    distinct = list(dict.fromkeys(words))
    if len(distinct) > vocab:
        raise ValueError(f"the vocabulary has {vocab} tokens; the text has {len(distinct)} different words")
    g = torch.Generator(device="cpu").manual_seed(0)  # a fixed shuffle, on the CPU: these are Python ints
    ids = torch.randperm(vocab, generator=g).tolist()[: len(distinct)]
    lookup = dict(zip(distinct, ids, strict=True))
    return [lookup[w] for w in words], words
