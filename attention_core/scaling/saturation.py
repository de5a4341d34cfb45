"""How a softmax row saturates as d_k grows (entropy falls, the largest weight tends to 1), and how
little gradient a saturated softmax passes back (via ``torch.autograd``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from ..attention import stable_softmax
from ..device import new_tensor_device
from ..validation import check_float, check_int, check_int_list
from ._sampling import MAX_D_K, MAX_KEYS, MAX_SAMPLES, _generator, _row_scores, _softmax_stats, softmax_jacobian


def saturation_table(
    dims: Sequence[int], n_keys: int = 16, seed: int = 0, *, n_rows: int = 256,
    device: str | torch.device | None = None,
) -> pd.DataFrame:  # fmt: skip
    """How saturated a softmax row (one query, ``n_keys`` keys, all N(0, 1)) is, per d_k, unscaled and ÷√d_k,
    over ``n_rows`` rows per d_k (:func:`~attention_core.scaling.scaling_strategies` tries other divisors).

    Columns: ``d_k``, then for ``unscaled`` and ``scaled``: ``entropy_*`` (mean nats), ``entropy_pct_*``
    (% of log n), ``max_weight_*`` (mean), ``score_var_*`` (of the softmax input), ``score_range_*`` (mean max − min).
    """
    dims = check_int_list("dims", dims, low=1, high=MAX_D_K)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    n_rows = check_int("n_rows", n_rows, low=2, high=MAX_SAMPLES)
    dev = new_tensor_device(device)
    out = []
    for d in dims:
        scores, _ = _row_scores(d, n_rows, n_keys, seed, dev)  # (n_rows, n_keys)
        row: dict[str, float] = {"d_k": d}
        for name, logits in (("unscaled", scores), ("scaled", scores / math.sqrt(d))):
            row.update({f"{k}_{name}": v for k, v in _softmax_stats(logits).items()})
        out.append(row)
    return pd.DataFrame(out)


def temperature_sweep(
    d_k: int, n_keys: int = 16, taus: Sequence[float] = (), seed: int = 0, *, n_rows: int = 256,
    device: str | torch.device | None = None,
) -> pd.DataFrame:  # fmt: skip
    """:func:`saturation_table`'s statistics of softmax(q·k / τ) on its rows at this d_k, for each τ in ``taus``.

    Columns: ``tau``, ``entropy``, ``entropy_pct``, ``max_weight``, ``score_var``, ``score_range``.
    """
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    n_rows = check_int("n_rows", n_rows, low=2, high=MAX_SAMPLES)
    taus = [check_float(f"taus[{i}]", t, low=0.0, low_open=True) for i, t in enumerate(taus)]
    if not taus:
        raise ValueError("taus must hold at least one temperature")
    scores, _ = _row_scores(d_k, n_rows, n_keys, seed, new_tensor_device(device))  # (n_rows, n_keys)
    return pd.DataFrame([{"tau": t, **_softmax_stats(scores / t)} for t in taus])


@dataclass(frozen=True)
class RowSample:
    """One query's raw ``scores (n_keys,)``, its softmax ``weights_* (n_keys,)`` and their Jacobians
    ``jacobian_* (n_keys, n_keys)``, unscaled and ÷√d_k."""

    scores: torch.Tensor
    weights_unscaled: torch.Tensor
    weights_scaled: torch.Tensor
    jacobian_unscaled: torch.Tensor
    jacobian_scaled: torch.Tensor

    def weights_at(self, tau: float) -> torch.Tensor:
        """softmax(scores / τ), ``(n_keys,)``."""
        tau = check_float("tau", tau, low=0.0, low_open=True)
        return stable_softmax(self.scores / tau)


def sample_row(d_k: int, n_keys: int = 16, seed: int = 0, *, device: str | torch.device | None = None) -> RowSample:
    """One row (q and ``n_keys`` keys with N(0, 1) entries, drawn as :func:`saturation_table`'s are), unscaled and
    ÷√d_k; the softmax and its Jacobian in float64."""
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    scores = _row_scores(d_k, 1, n_keys, seed, new_tensor_device(device))[0][0]  # (n_keys,)
    w_u = stable_softmax(scores)
    w_s = stable_softmax(scores / math.sqrt(d_k))
    return RowSample(scores, w_u, w_s, softmax_jacobian(w_u), softmax_jacobian(w_s))


def gradient_table(
    dims: Sequence[int], n_keys: int = 4, n_trials: int = 512, seed: int = 0,
    *, device: str | torch.device | None = None,
) -> pd.DataFrame:  # fmt: skip
    """How much gradient flows back through softmax, per d_k, unscaled and ÷√d_k: on ``n_trials`` rows (those of
    :func:`saturation_table`), autograd pulls a random g ~ N(0, I) back through it: (diag(s) − ssᵀ) g.

    Columns, each for ``unscaled`` and ``scaled``: ``jac_diag_*`` (mean s(1 − s)), ``grad_*`` and ``grad_median_*``
    (mean and median ‖∂L/∂z‖ at the softmax input z), ``dead_*`` (share of rows passing < 0.01); the
    median ‖∂L/∂(q·k)‖ ``grad_qk_median_*`` (the scaled model's is its ‖∂L/∂z‖ ÷ √d_k, the division's chain rule);
    and the ratios scaled / unscaled ``grad_ratio``, ``grad_median_ratio``, ``grad_qk_median_ratio``.
    """
    dims = check_int_list("dims", dims, low=1, high=MAX_D_K)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    n_trials = check_int("n_trials", n_trials, low=2, high=MAX_SAMPLES)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    dev = new_tensor_device(device)
    out = []
    for d in dims:
        scores, _ = _row_scores(d, n_trials, n_keys, seed, dev)  # (n_trials, n_keys)
        g = _generator(seed, "upstream", d, n_keys, device=dev)
        upstream = torch.randn(scores.shape, generator=g, device=dev, dtype=torch.float64)  # (n_trials, n_keys)
        row: dict[str, float] = {"d_k": d}
        for name, divisor in (("unscaled", 1.0), ("scaled", math.sqrt(d))):
            qk = scores.clone().requires_grad_(True)  # (n_trials, n_keys)
            z = qk / divisor
            z.retain_grad()
            s = stable_softmax(z)  # (n_trials, n_keys)
            (s * upstream).sum().backward()
            norms = z.grad.norm(dim=-1)  # (n_trials,)
            s = s.detach()
            row[f"jac_diag_{name}"] = float((s * (1 - s)).mean())
            row[f"grad_{name}"] = float(norms.mean())
            row[f"grad_median_{name}"] = float(norms.median())
            row[f"dead_{name}"] = float((norms < 0.01).double().mean())
            row[f"grad_qk_median_{name}"] = float(qk.grad.norm(dim=-1).median())
        out.append(row)
    t = pd.DataFrame(out)
    for column in ("grad", "grad_median", "grad_qk_median"):
        t[f"{column}_ratio"] = t[f"{column}_scaled"] / t[f"{column}_unscaled"].clip(lower=1e-300)
    return t
