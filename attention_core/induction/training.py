"""Training as a generator: each record says how far the model has come, so a page can draw it live and stop it.

    for p in train(seed=0, layers=2):
        print(p.step, p.seconds, p.loss_first, p.loss_repeat, p.induction_score)

The same loop makes the shipped weights (``python -m attention_core.induction``), runs in the tests for
a few steps and in ``benchmarks/induction_report.py``.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from ..device import busy_cpu, new_tensor_device, one_thread
from ..optim import Optimizer
from ..validation import check_float, check_int
from .model import InductionConfig, InductionWeights, forward, half_losses, init_weights
from .scores import copying_scores, prefix_matching_score, previous_token_score
from .task import repeated_tokens, seeded_generator

EVAL_BATCH = 32  # held-out sequences the per-head scores are measured on
EVAL_SEED_SALT = 0x1D  # the held-out batch's generator is seeded apart from the training data's


@dataclass(frozen=True)
class Progress:
    """One record of :func:`train`. Losses in nats; every score in [0, 1]; per-head scores ``[layer][head]``."""

    step: int  # optimiser steps taken so far
    seconds: float  # wall-clock time since training began (setup excluded)
    loss_first: float  # mean cross-entropy on the held-out batch's first half: nothing to look up
    loss_repeat: float  # on its repeated half: what an induction head can predict
    induction_score: float  # the best last-layer head's prefix-matching score
    previous_token: tuple[tuple[float, ...], ...]  # per head, on the held-out batch
    prefix_matching: tuple[tuple[float, ...], ...]
    copying: tuple[tuple[float, ...], ...]
    weights: InductionWeights  # the live weights (trained in place; copy them to keep a snapshot)


@torch.no_grad()
def head_scores(
    weights: InductionWeights, tokens: torch.Tensor, *, causal: bool = True, ablate: tuple = ()
) -> dict[str, torch.Tensor]:
    """Every head's previous-token, prefix-matching and copying scores on ``tokens (N, 2·half)``,
    each ``(layers, H)`` float64 on the CPU, and the two half losses."""
    half = weights.config.half
    if tokens.dim() != 2 or tokens.shape[1] != 2 * half:
        raise ValueError(f"tokens must be (N, 2·half = {2 * half}) repeated sequences, got {tuple(tokens.shape)}")
    fw = forward(weights, tokens, causal=causal, ablate=ablate, keep=True)
    assert fw.patterns is not None
    first, repeat = half_losses(fw.logits, tokens, half)
    return {
        "previous_token": torch.stack([previous_token_score(p) for p in fw.patterns]).double().cpu(),
        "prefix_matching": torch.stack([prefix_matching_score(p, half) for p in fw.patterns]).double().cpu(),
        "copying": copying_scores(weights),
        "loss_first": first.double().cpu(),
        "loss_repeat": repeat.double().cpu(),
    }


def eval_tokens(config: InductionConfig, seed: int = 0, device: str | torch.device | None = None) -> torch.Tensor:
    """The held-out batch the scores are measured on: ``(EVAL_BATCH, 2·half)``, the same for every run."""
    dev = new_tensor_device(device)
    g = seeded_generator(seed ^ EVAL_SEED_SALT, dev)
    return repeated_tokens(EVAL_BATCH, config.half, config.vocab, generator=g, device=dev)


def _rows(t: torch.Tensor) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(x) for x in row) for row in t.tolist())


def train(
    seed: int = 0, layers: int = 2, *, steps: int = 2000, batch: int = 64, lr: float = 5e-3,
    weight_decay: float = 0.01, causal: bool = True, every: int = 10, config: InductionConfig | None = None,
    device: str | torch.device | None = None, single_thread: bool | None = None,
) -> Iterator[Progress]:  # fmt: skip
    """Train the attention-only decoder on repeated random tokens; yield a :class:`Progress` every ``every`` steps.

    Each step's batch repeats blocks of one random length between ``half // 2`` and ``half``, so the distance
    to the earlier copy changes from batch to batch and no head can find it by position alone (with one fixed
    length, a single layer learns "look ``half − 1`` back" and solves the task without an induction head).
    The losses and scores of each record are measured on a fixed held-out batch of full-length sequences
    (:func:`eval_tokens`), so records are comparable from step to step and from run to run.

    The first record is step 0 (before any update), the last is ``steps``. ``config`` defaults to
    :class:`InductionConfig` with ``layers`` layers. ``causal=False`` trains without the causal mask: each position can
    read the token it is asked to predict. The same ``seed`` (and device and thread choice) gives the same
    records, except ``seconds``. Stop early by leaving the loop (``break``) or closing the generator.

    Threads, on the CPU: measured on a 2-core machine, one step took 13 ms on two intra-op threads against
    26 ms on one when the second core was free (median of 3 alternating runs of 60 steps), but two threads
    took about twice as long as one while other processes kept the cores busy (they wait on each other).
    ``single_thread=None`` therefore picks at the start: one thread (:func:`attention_core.device.one_thread`)
    when the 1-minute load average leaves less than one core free, else torch's configured count. ``True``
    always uses one, whose sums do not depend on the core count (the shipped runs are made so).
    """
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    steps = check_int("steps", steps, low=0, high=1_000_000)
    batch = check_int("batch", batch, low=1, high=4096)
    every = check_int("every", every, low=1, high=1_000_000)
    lr = check_float("lr", lr, low=0.0, low_open=True, high=1.0)
    weight_decay = check_float("weight_decay", weight_decay, low=0.0, high=1.0)
    config = config or InductionConfig(layers=check_int("layers", layers, low=1, high=4))
    if not isinstance(config, InductionConfig):
        raise ValueError(f"config must be an InductionConfig or None, got {type(config).__name__}")
    dev = new_tensor_device(device)
    weights = init_weights(config, seed, dev)
    if single_thread is None:
        single_thread = busy_cpu()
    return _loop(weights, seed, steps, batch, lr, weight_decay, causal, every, dev, bool(single_thread))


def _loop(
    weights: InductionWeights, seed: int, steps: int, batch: int, lr: float, wd: float, causal: bool, every: int,
    dev: torch.device, single_thread: bool,
) -> Iterator[Progress]:  # fmt: skip
    cfg = weights.config
    data = seeded_generator(seed, dev)
    held_out = eval_tokens(cfg, seed, dev)
    opt = Optimizer(weights.parameters(), "adam", lr, wd)
    threads = one_thread(dev) if single_thread else contextlib.nullcontext()  # one_thread: no-op off the CPU
    lo = max(2, cfg.half // 2)
    start = time.perf_counter()
    with threads:
        for step in range(steps + 1):
            if step % every == 0 or step == steps:
                s = head_scores(weights, held_out, causal=causal)
                last = s["prefix_matching"][-1]
                yield Progress(
                    step=step, seconds=time.perf_counter() - start, loss_first=float(s["loss_first"]),
                    loss_repeat=float(s["loss_repeat"]),
                    induction_score=float(last.max()), previous_token=_rows(s["previous_token"]),
                    prefix_matching=_rows(s["prefix_matching"]), copying=_rows(s["copying"]), weights=weights,
                )  # fmt: skip
            if step == steps:
                return
            half = int(torch.randint(lo, cfg.half + 1, (1,), generator=data, device=dev))
            tokens = repeated_tokens(batch, half, cfg.vocab, generator=data, device=dev)  # (B, 2·half)
            logits = forward(weights, tokens, causal=causal).logits  # (B, 2·half, V)
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, cfg.vocab), tokens[:, 1:].reshape(-1)
            )  # every next-token prediction
            loss.backward()
            opt.step()
            opt.zero_grad()


def phase_change_step(steps: Sequence[float], loss_repeat: Sequence[float], vocab: int) -> int | None:
    """The step of the phase change: the first record whose repeated-half loss is below ½·ln V, halfway from
    chance (ln V, a uniform guess) to perfect (0). ``None`` while it has not come."""
    vocab = check_int("vocab", vocab, low=2)
    steps, losses = list(steps), list(loss_repeat)
    if len(steps) != len(losses):
        raise ValueError(f"steps and loss_repeat must have one entry per record, got {len(steps)} and {len(losses)}")
    threshold = 0.5 * math.log(vocab)
    return next((int(s) for s, x in zip(steps, losses, strict=True) if x < threshold), None)
