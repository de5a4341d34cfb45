"""A tiny retrieval model, one attention head and nothing else, trained with and without ÷√d_k."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import torch

from ..device import new_tensor_device
from ..optim import OPTIMIZERS, Optimizer
from ..validation import check_choice, check_float, check_int, check_ints
from ._sampling import MAX_D_K, MAX_KEYS, _generator, _small_op_mode

DEFAULT_LR = {"adam": 1e-2, "sgd": 0.3}
SMOOTH = 10  # steps in the moving average of the toy model's loss


def train_toy(
    scaled: bool, d_k: int = 64, *, d_model: int = 16, n_keys: int = 8, d_v: int = 8,  # the model and its task
    batch: int = 32, steps: int = 200, optimizer: str = "adam", lr: float | None = None,  # the training
    init_std: float | None = None, seed: int = 0, device: str | torch.device | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Train a one-head, attention-only model to retrieve a value, with or without ÷√d_k.

    Each example has ``n_keys`` tokens x_j ``(d_model,)`` with values v_j ``(d_v,)``, all N(0, 1) and fresh every
    step; the query token is x_t A for a random target t and a fixed random rotation A, so W_q, W_k
    ``(d_model, d_k)`` must *learn* to make q·k_t stand out. The loss is the mean squared error of
    softmax(q Kᵀ / c) V against v_t, c = √d_k (``scaled``) or 1, so every gradient passes through the softmax;
    uniform weights give about (n−1)/n. W_q, W_k start at N(0, ``init_std``²) (default 1/√d_model), the same for
    a ``seed`` whether or not ``scaled``, as the data are; ``lr`` defaults to :data:`DEFAULT_LR`.
    ``progress(step, steps)`` is called after each step.

    Returns one row per step: ``step``, ``loss``, ``accuracy`` (largest weight on the target), ``grad_scores``
    (‖∂L/∂(q·k)‖), ``grad_logits`` (‖∂L/∂z‖ at z = q·k / c), ``logit_std`` (std of z: how saturated the softmax
    is), and ``loss_smooth``, ``grad_scores_smooth``, averages over the last :data:`SMOOTH` steps.
    """
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    d_model, d_v, batch = check_ints(d_model=d_model, d_v=d_v, batch=batch, low=1, high=4096)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    steps = check_int("steps", steps, low=1, high=100_000)
    optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
    lr = DEFAULT_LR[optimizer] if lr is None else check_float("lr", lr, low=0.0, low_open=True, high=100.0)
    std = 1.0 / math.sqrt(d_model) if init_std is None else check_float(
        "init_std", init_std, low=0.0, low_open=True, high=100.0)  # fmt: skip
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be a callable(step, steps) or None, got {type(progress).__name__}")
    dev = new_tensor_device(device)
    g = _generator(seed, "toy", d_model, n_keys, d_v, device=dev)
    rot, _ = torch.linalg.qr(torch.randn(d_model, d_model, generator=g, device=dev))  # (d_model, d_model)
    w_q = (torch.randn(d_model, d_k, generator=g, device=dev) * std).requires_grad_(True)  # (d_model, d_k)
    w_k = (torch.randn(d_model, d_k, generator=g, device=dev) * std).requires_grad_(True)  # (d_model, d_k)
    opt = Optimizer([w_q, w_k], optimizer, lr)
    c = math.sqrt(d_k) if scaled else 1.0
    rows = torch.arange(batch, device=dev)
    history = torch.zeros(steps, 5, device=dev)  # (steps, 5): the columns below
    with _small_op_mode(dev):
        for step in range(steps):
            x = torch.randn(batch, n_keys, d_model, generator=g, device=dev)  # (B, n, d_model)
            v = torch.randn(batch, n_keys, d_v, generator=g, device=dev)  # (B, n, d_v)
            target = torch.randint(0, n_keys, (batch,), generator=g, device=dev)  # (B,)
            x_q = x[rows, target] @ rot  # (B, d_model)
            q = (x_q @ w_q).unsqueeze(1)  # (B, 1, d_k)
            k = x @ w_k  # (B, n, d_k)
            scores = (q @ k.transpose(-2, -1)).squeeze(1)  # (B, 1, d_k) @ (B, d_k, n) -> (B, n)
            scores.retain_grad()
            logits = scores / c  # (B, n)
            logits.retain_grad()
            weights = torch.softmax(logits, dim=-1)  # (B, n)
            out = (weights.unsqueeze(1) @ v).squeeze(1)  # (B, 1, n) @ (B, n, d_v) -> (B, d_v)
            loss = ((out - v[rows, target]) ** 2).sum(-1).mean() / d_v
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                accuracy = (weights.argmax(-1) == target).float().mean()
                history[step] = torch.stack([loss, accuracy, scores.grad.norm(), logits.grad.norm(), logits.std()])
            if progress is not None:
                progress(step + 1, steps)
    columns = ["loss", "accuracy", "grad_scores", "grad_logits", "logit_std"]
    h = pd.DataFrame(history.double().cpu().numpy(), columns=columns)
    h.insert(0, "step", np.arange(steps))
    for column in ("loss", "grad_scores"):
        h[f"{column}_smooth"] = h[column].rolling(SMOOTH, min_periods=1).mean()
    return h


def training_summary(histories: Mapping[str, pd.DataFrame], threshold: float = 0.1) -> pd.DataFrame:
    """One row per run of :func:`train_toy`: where it started, where it ended, how fast.

    The threshold is tested on ``loss_smooth`` (the loss averaged over :data:`SMOOTH` steps).
    Columns: ``run``, ``start_loss`` (first 10 steps), ``end_loss`` (last 10%), ``end_accuracy``,
    ``steps_to_threshold`` (first step whose smoothed loss is below ``threshold``; NaN if never),
    ``start_logit_std``, ``start_grad_logits``, ``end_grad_logits``.
    """
    threshold = check_float("threshold", threshold, low=0.0, low_open=True)
    if not histories:
        raise ValueError("histories must hold at least one run")
    out = []
    for name, h in histories.items():
        missing = {"step", "loss", "loss_smooth", "accuracy", "grad_logits", "logit_std"} - set(
            getattr(h, "columns", []))  # fmt: skip
        if missing or len(h) == 0:
            raise ValueError(f"run {name!r} must be a non-empty train_toy history; missing {sorted(missing)}")
        below = h["step"][h["loss_smooth"] < threshold]
        tail = max(1, len(h) // 10)
        out.append(
            {
                "run": name,
                "start_loss": float(h["loss"].iloc[:10].mean()),
                "end_loss": float(h["loss"].iloc[-tail:].mean()),
                "end_accuracy": float(h["accuracy"].iloc[-tail:].mean()),
                "steps_to_threshold": float(below.iloc[0]) if len(below) else math.nan,
                "start_logit_std": float(h["logit_std"].iloc[0]),
                "start_grad_logits": float(h["grad_logits"].iloc[0]),
                "end_grad_logits": float(h["grad_logits"].iloc[-tail:].mean()),
            }
        )
    return pd.DataFrame(out)
