"""Other ways to set the softmax temperature: other divisors, a fitted temperature, cosine attention."""

from __future__ import annotations

import math

import pandas as pd
import torch

from ..attention import stable_softmax
from ..device import new_tensor_device
from ..optim import Optimizer
from ..validation import check_float, check_int
from ._sampling import MAX_D_K, MAX_KEYS, MAX_SAMPLES, _row_scores, _small_op_mode, _softmax_stats, entropy_pct


def _fit_temperature(logits: torch.Tensor, target_pct: float, steps: int, lr: float) -> tuple[float, float]:
    """Fit τ in softmax(logits / τ) so the mean row entropy is ``target_pct`` % of log n: Adam on log τ from τ = 1,
    minimising (mean entropy / log n − target)². Returns (τ, the % reached on these rows)."""
    log_tau = torch.zeros((), dtype=torch.float64, device=logits.device, requires_grad=True)
    opt = Optimizer([log_tau], "adam", lr)
    log_n = math.log(logits.shape[-1])
    for _ in range(steps):
        opt.zero_grad()
        w = torch.softmax(logits / log_tau.exp(), dim=-1)  # (rows, n); entropy unchecked: hundreds of tiny steps
        loss = (-torch.special.xlogy(w, w).sum(-1).mean() / log_n - target_pct / 100.0) ** 2
        loss.backward()
        opt.step()
    tau = float(log_tau.detach().exp())
    return tau, float(entropy_pct(stable_softmax(logits / tau)).mean())


# The fixed divisors: a strategy's name → what it divides q·k by at a given d_k, and how that reads.
_FIXED = {
    "none": (lambda d: 1.0, "q·k, raw"),
    "√d_k": (math.sqrt, "q·k / √d_k: the Transformer's choice"),
    "d_k": (float, "q·k / d_k"),
    "d_k^¼": (lambda d: d**0.25, "q·k / d_k^¼"),
    "2√d_k": (lambda d: 2.0 * math.sqrt(d), "q·k / (2√d_k)"),
}
STRATEGY_NAMES = (*_FIXED, "learned τ", "cosine / τ")


def scaling_strategies(
    d_k: int, n: int = 16, seed: int = 0, *, n_rows: int = 256, target_entropy_pct: float = 50.0,
    fit_steps: int = 150, device: str | torch.device | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Seven ways to set the softmax temperature, each measured on the half of the random rows no fit saw.

    Rows (``strategy``): the fixed divisors none, √d_k, d_k, d_k^¼, 2√d_k; ``learned τ``, fitted by ``fit_steps``
    Adam steps (lr 0.1) on log τ from τ = 1 to a mean entropy of ``target_entropy_pct`` % of log n on the other
    half; ``cosine / τ``, q and k L2-normalised (q̂·k̂ ∈ [−1, 1]), divided by a τ fitted the same way.
    Columns: ``strategy``, ``divisor`` (of q·k, or q̂·k̂), ``score_var``, ``score_range``, ``entropy``,
    ``entropy_pct``, ``max_weight``, ``how``.
    """
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    n = check_int("n", n, low=2, high=MAX_KEYS)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    n_rows = check_int("n_rows", n_rows, low=4, high=MAX_SAMPLES)
    target = check_float("target_entropy_pct", target_entropy_pct, low=1.0, high=99.0)
    fit_steps = check_int("fit_steps", fit_steps, low=1, high=10_000)
    scores, cos = _row_scores(d_k, n_rows, n, seed, new_tensor_device(device), cosine=True)  # (n_rows, n) each
    assert cos is not None
    half = n_rows // 2
    fit_note = f"{fit_steps} Adam steps on log τ from τ = 1 to a {target:g}% entropy target on {half} rows"
    out = [{"strategy": name, "divisor": divisor(d_k), **_softmax_stats(scores[half:] / divisor(d_k)), "how": how}
           for name, (divisor, how) in _FIXED.items()]  # fmt: skip
    for name, rows, how in (("learned τ", scores, "q·k / τ"), ("cosine / τ", cos, "q̂·k̂ / τ, q and k L2-normalised")):
        with _small_op_mode(rows.device):  # hundreds of tiny steps: one thread is several times faster
            tau, reached = _fit_temperature(rows[:half], target, fit_steps, 0.1)
        out.append({"strategy": name, "divisor": tau, **_softmax_stats(rows[half:] / tau),
                    "how": f"{how}; {fit_note} (reached {reached:.1f}%)"})  # fmt: skip
    return pd.DataFrame(out)
