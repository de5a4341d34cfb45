"""Decoding token by token with the KV cache: greedy (T = 0) or sampled at temperature T.

The prompt runs once, filling the cache; then each step runs the layers on one new token, reads
its logits, picks the next token, and reports the attention row the new position drew in every layer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..validation import check_int
from .model import Decoder, KVCache, check_text, forward, logits_of
from .run import check_temperature, probabilities


@dataclass(frozen=True)
class DecodeStep:
    """One generated token.

    ``id`` and ``token`` (its piece, ``▁`` as a space); ``text_so_far``: the generated text so far, without the
    prompt; ``seconds``: the wall time from the step's start to its token (the first step's includes the prompt's
    forward); ``attention_row (n_layers, n_heads, n_ctx)`` float32: how the position that chose this token
    attended to each of the ``n_ctx`` positions before it (itself included).
    """

    id: int
    token: str
    text_so_far: str
    seconds: float
    attention_row: torch.Tensor


def generate(
    model: Decoder, text: str, max_new_tokens: int, temperature: float = 0.0, seed: int = 0,
    *, sliding_window: bool = True, stop_at_eos: bool = True,
) -> Iterator[DecodeStep]:  # fmt: skip
    """Yield up to ``max_new_tokens`` tokens that continue ``text``, one :class:`DecodeStep` at a time.

    Greedy when ``temperature`` is 0; otherwise sampled from softmax(logits / T) with a generator seeded
    by ``seed``, so a rerun repeats itself. Stops after ``<eos>`` when ``stop_at_eos``. The arguments are
    checked before the first step (``ValueError``), so a bad call fails at once, not at ``next()``.
    """
    n_new = check_int("max_new_tokens", max_new_tokens, low=1, high=model.config.max_tokens)
    t = check_temperature(temperature)
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    ids = check_text(model, text, room=n_new)
    return _steps(model, ids, n_new, t, seed, bool(sliding_window), bool(stop_at_eos))


def _steps(
    model: Decoder, ids: list[int], n_new: int, t: float, seed: int, window: bool, stop_at_eos: bool
) -> Iterator[DecodeStep]:
    dev, tok = model.device, model.tokenizer
    gen = torch.Generator(device=dev).manual_seed(seed)
    cache = KVCache.empty(model, len(ids) + n_new)
    new: list[int] = []
    start = time.perf_counter()
    with torch.inference_mode():
        if len(ids) > 1:  # the prompt but its last token, without tracing; the last one runs as a step
            forward(model, torch.tensor([ids[:-1]], device=dev), cache, window=window)
    last = ids[-1]
    for _ in range(n_new):
        with torch.inference_mode():
            hidden, records = forward(model, torch.tensor([[last]], device=dev), cache, trace=True, window=window)
            logits = logits_of(model, hidden[0, -1])  # (vocab,)
            chosen = int(torch.multinomial(probabilities(logits, t), 1, generator=gen) if t > 0 else logits.argmax())
            row = torch.stack([r.weights[0, :, -1, :] for r in records])  # (n_layers, h, n_ctx)
        seconds = time.perf_counter() - start
        new.append(chosen)
        yield DecodeStep(chosen, tok.token_strings([chosen])[0], tok.decode(new), seconds, row)
        if stop_at_eos and chosen == model.config.eos_id:
            return
        last = chosen
        start = time.perf_counter()
