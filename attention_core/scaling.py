"""Why attention divides by √d_k, measured rather than asserted.

For q, k with independent zero-mean, unit-variance components,

    Var(q·k) = Σᵢ Var(qᵢ kᵢ) = d_k,     so     Var(q·k / √d_k) = 1.

The functions below sample that claim and its consequences, each returning the
numbers a page shows next to the theory:

* :func:`variance_table`, :func:`dot_products`: the variance of q·k against d_k;
* :func:`saturation_table`, :func:`temperature_sweep`, :func:`sample_row`: how a
  softmax row saturates (entropy falls, the largest weight tends to 1);
* :func:`gradient_table`, :func:`softmax_jacobian`: how little gradient a
  saturated softmax passes back (via ``torch.autograd``);
* :func:`scaling_strategies`: other divisors, a fitted temperature, cosine attention;
* :func:`init_effects`: how the projections' initial std sets the score variance;
* :func:`softmax_overflow`, :func:`overflow_sweep`: why softmax subtracts the row max;
* :func:`train_toy`, :func:`training_summary`: a tiny retrieval model trained with
  and without the scaling.

Every function is seeded (same arguments, same numbers on one device) and takes a
``device``, by default torch's default device as for ``torch.ones`` (the app passes its
own). Samples for one d_k come from a generator seeded by ``(seed, d_k, …)``,
so a d_k's numbers do not depend on which other d_k were asked for.
"""

from __future__ import annotations

import contextlib
import math
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from .attention import stable_softmax
from .device import new_tensor_device, one_thread
from .layers import xavier_std
from .validation import check_choice, check_float, check_int, check_int_list, check_tensor

MAX_D_K = 1 << 16
MAX_SAMPLES = 1_000_000
MAX_KEYS = 4096
DEFAULT_SAMPLES = 20_000  # relative std. error of the variance ≈ √(2/n) ≈ 1% (2% at d_k = 1)
INITS = ("normal", "uniform", "rademacher")
SCALE_RULES = ("none", "sqrt", "d", "fourth_root", "two_sqrt")
OPTIMIZERS = ("adam", "sgd")
DEFAULT_LR = {"adam": 1e-2, "sgd": 0.3}
SMOOTH = 10  # steps in the moving average of the toy model's loss
_CHUNK = 1 << 21  # elements per generated block: memory stays bounded whatever d_k × samples


# ---------------------------------------------------------------------------------------------
# Sampling helpers

@contextlib.contextmanager
def _small_op_mode(device: torch.device) -> Iterator[None]:
    """Run many tiny CPU ops fast: one intra-op thread, denormals flushed to zero.

    Used by the toy training and the temperature fits: their tensors hold a few thousand
    numbers, and splitting them over threads costs more than it saves (5-20× more on a
    busy 2-core machine). A saturated softmax also makes gradients of ~1e-40, denormal
    floats that are 10-100× slower on CPUs; flushing them to zero (as GPU fast paths do)
    changes nothing visible. The thread count is process-wide and shared with the
    benchmark (see :func:`attention_core.device.one_thread`); flushing is per thread.
    """
    if device.type != "cpu":
        yield
        return
    with one_thread(device):
        flushed = torch.set_flush_denormal(True)
        try:
            yield
        finally:
            if flushed:
                torch.set_flush_denormal(False)


class _Optimizer:
    """Plain SGD, or Adam with torch's defaults (β₁ = 0.9, β₂ = 0.999, ε = 1e-8), for a few tensors.

    The same update rules as ``torch.optim.SGD`` and ``torch.optim.Adam`` (a test holds them to
    it), written out because constructing a ``torch.optim`` optimizer imports ``torch._dynamo``:
    about 70 MB of resident memory and a second on first use, for a server that trains toys.
    """

    def __init__(self, params: Sequence[torch.Tensor], kind: str, lr: float) -> None:
        self.params = list(params)
        self.kind = check_choice("optimizer", kind, OPTIMIZERS)
        self.lr = check_float("lr", lr, low=0.0, low_open=True)
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            g = p.grad
            if self.kind == "sgd":
                p.add_(g, alpha=-self.lr)
                continue
            m.lerp_(g, 1 - b1)  # m ← β₁m + (1 − β₁)g
            v.mul_(b2).addcmul_(g, g, value=1 - b2)  # v ← β₂v + (1 − β₂)g²
            denom = (v.sqrt() / math.sqrt(1 - b2**self.t)).add_(eps)
            p.addcdiv_(m, denom, value=-self.lr / (1 - b1**self.t))  # p ← p − lr·m̂ / (√v̂ + ε)


def _generator(seed: int, *salt: object, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded by ``seed`` and a salt (e.g. the d_k and a purpose)."""
    words = [seed] + [zlib.crc32(repr(s).encode()) for s in salt]
    state = np.random.SeedSequence(words).generate_state(2, dtype=np.uint32)
    g = torch.Generator(device=device)
    g.manual_seed(int(state[0]) << 31 | int(state[1]) >> 1)
    return g


def _fill(buf: torch.Tensor, init: str, g: torch.Generator) -> torch.Tensor:
    """Overwrite ``buf`` with unit-variance, zero-mean entries: Gaussian, uniform on [−√3, √3], or ±1."""
    if init == "normal":
        return buf.normal_(generator=g)
    if init == "uniform":
        return buf.uniform_(-math.sqrt(3.0), math.sqrt(3.0), generator=g)
    return buf.bernoulli_(0.5, generator=g).mul_(2.0).sub_(1.0)


def _divisor(rule: str, d_k: int) -> float:
    """The number the scores are divided by under a scaling rule."""
    return {
        "none": 1.0,
        "sqrt": math.sqrt(d_k),
        "d": float(d_k),
        "fourth_root": d_k**0.25,
        "two_sqrt": 2.0 * math.sqrt(d_k),
    }[rule]


def _row_scores(
    d_k: int, n_rows: int, n_keys: int, seed: int, device: torch.device, *, cosine: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Raw scores of ``n_rows`` independent queries against their own ``n_keys`` keys.

    q, k have i.i.d. N(0, 1) entries. Returns float64 ``scores (n_rows, n_keys)`` and,
    when asked, the cosine similarities ``(n_rows, n_keys)``. Generated in blocks, so a
    large d_k never holds more than ``_CHUNK`` numbers per tensor at once.
    """
    g = _generator(seed, "rows", d_k, n_keys, device=device)
    per_block = max(1, min(n_rows, _CHUNK // ((n_keys + 1) * d_k)))
    # One pair of buffers refilled block after block: allocating fresh multi-MB tensors per block
    # lets glibc's heap grow by hundreds of MB (its mmap threshold adapts upwards) and keep it.
    q_buf = torch.empty(per_block, 1, d_k, device=device)
    k_buf = torch.empty(per_block, n_keys, d_k, device=device)
    scores, cosines = [], []
    for start in range(0, n_rows, per_block):
        r = min(per_block, n_rows - start)
        q = q_buf[:r].normal_(generator=g)  # (r, 1, d_k)
        k = k_buf[:r].normal_(generator=g)  # (r, n_keys, d_k)
        s = (q @ k.transpose(-2, -1)).squeeze(-2)  # (r, 1, d_k) @ (r, d_k, n_keys) -> (r, n_keys)
        scores.append(s.double())
        if cosine:
            norms = q.norm(dim=-1) * k.norm(dim=-1)  # (r, n_keys)
            cosines.append((s / norms).double())
    return torch.cat(scores), (torch.cat(cosines) if cosine else None)


def row_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) of each row of ``weights (..., n)``, with 0·log 0 = 0. Returns ``(...)``."""
    check_tensor("weights", weights, min_dim=1)
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """∂softmax/∂z = diag(s) − s sᵀ for each row ``s`` of ``weights (..., n)``. Returns ``(..., n, n)``.

    The diagonal s(1 − s) is how strongly a logit moves its own weight; when the
    row is one-hot (saturated) every entry is ≈ 0 and almost no gradient passes.
    """
    check_tensor("weights", weights, min_dim=1)
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)  # (..., n, n)


def _softmax_stats(logits: torch.Tensor) -> dict[str, float]:
    """Mean entropy, mean entropy as % of log n, mean max weight, variance and mean range of ``(rows, n)``."""
    w = stable_softmax(logits, dim=-1)  # (rows, n)
    h = row_entropy(w)  # (rows,)
    n = logits.shape[-1]
    return {
        "entropy": float(h.mean()),
        "entropy_pct": float(100.0 * h.mean() / math.log(n)),
        "max_weight": float(w.amax(dim=-1).mean()),
        "score_var": float(logits.var()),
        "score_range": float((logits.amax(dim=-1) - logits.amin(dim=-1)).mean()),
    }


# ---------------------------------------------------------------------------------------------
# Variance


def dot_products(
    d_k: int,
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    *,
    init: str = "normal",
    device: str | torch.device | None = None,
) -> torch.Tensor:
    """``n_samples`` independent draws of q·k for q, k with unit-variance entries.

    ``init`` is the entries' distribution: ``normal``, ``uniform`` (on [−√3, √3])
    or ``rademacher`` (±1); all have variance 1, so Var(q·k) = d_k for each.
    Returns float32 ``(n_samples,)`` on ``device``; divide by √d_k for the scaled scores.
    """
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    n_samples = check_int("n_samples", n_samples, low=2, high=MAX_SAMPLES)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    init = check_choice("init", init, INITS)
    dev = new_tensor_device(device)
    g = _generator(seed, "dot", init, d_k, device=dev)
    per_block = max(1, min(n_samples, _CHUNK // d_k))
    q_buf = torch.empty(per_block, d_k, device=dev)  # refilled block after block (see _row_scores)
    k_buf = torch.empty(per_block, d_k, device=dev)
    out = []
    for start in range(0, n_samples, per_block):
        r = min(per_block, n_samples - start)
        q = _fill(q_buf[:r], init, g)  # (r, d_k)
        k = _fill(k_buf[:r], init, g)  # (r, d_k)
        out.append(q.mul_(k).sum(dim=-1))  # (r,)
    return torch.cat(out)  # (n_samples,)


def variance_table(
    dims: Sequence[int],
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    init: str = "normal",
    *,
    device: str | torch.device | None = None,
) -> pd.DataFrame:
    """Var(q·k) measured against its theory, d_k, before and after ÷√d_k.

    Columns: ``d_k``, ``theoretical_var`` (= d_k), ``empirical_var``, ``empirical_std``,
    ``rel_error`` (empirical / theory − 1), ``scaled_var`` (of q·k/√d_k, theory 1),
    ``scaled_std``, ``abs_p95`` (95% of |q·k| lie below it) and ``scaled_abs_p95``.
    With the default 20,000 samples the estimate's standard error is about 1% (2% at d_k = 1).
    """
    dims = check_int_list("dims", dims, low=1, high=MAX_D_K)
    rows = []
    for d in dims:
        x = dot_products(d, n_samples, seed, init=init, device=device).double()  # (n_samples,)
        var = float(x.var())
        p95 = float(torch.quantile(x.abs().cpu(), 0.95))
        rows.append(
            {
                "d_k": d,
                "theoretical_var": float(d),
                "empirical_var": var,
                "empirical_std": math.sqrt(var),
                "rel_error": var / d - 1.0,
                "scaled_var": var / d,
                "scaled_std": math.sqrt(var / d),
                "abs_p95": p95,
                "scaled_abs_p95": p95 / math.sqrt(d),
            }
        )
    return pd.DataFrame(rows)


def histogram_table(
    samples: torch.Tensor, bins: int = 60, span: float | None = None, *, normal_std: float | None = None
) -> pd.DataFrame:
    """Counts of ``samples (n,)`` in ``bins`` equal bins over [−span, span] (default: 4 std devs).

    Columns: ``center``, ``count``, ``density`` (count / (n · width), comparable with a pdf) and,
    when ``normal_std`` is given, ``normal_pdf``: the N(0, normal_std²) density at each centre
    (the central-limit approximation of q·k). Samples outside the span are left out.
    """
    check_tensor("samples", samples, min_dim=1)
    bins = check_int("bins", bins, low=2, high=10_000)
    x = samples.detach().double().flatten().cpu()
    if x.numel() < 2:
        raise ValueError(f"samples must hold at least 2 values, got {x.numel()}")
    span = 4.0 * float(x.std()) if span is None else check_float("span", span, low=0.0, low_open=True)
    span = span if span > 0 else 1.0
    counts = torch.histc(x, bins=bins, min=-span, max=span)  # (bins,)
    width = 2 * span / bins
    centers = -span + width * (torch.arange(bins, dtype=torch.float64) + 0.5)  # (bins,)
    table = pd.DataFrame(
        {"center": centers.numpy(), "count": counts.numpy(), "density": (counts / (x.numel() * width)).numpy()}
    )
    if normal_std is not None:
        sd = check_float("normal_std", normal_std, low=0.0, low_open=True)
        table["normal_pdf"] = np.exp(-0.5 * (table["center"] / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
    return table


def dot_product_histograms(
    d_k: int,
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    bins: int = 60,
    *,
    device: str | torch.device | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Histograms of q·k and of q·k/√d_k (the same samples as :func:`variance_table` at this d_k).

    Each is a :func:`histogram_table` over ±4 theoretical std devs (±4√d_k and ±4) with the
    normal approximation N(0, d_k), N(0, 1) in ``normal_pdf``.
    """
    x = dot_products(d_k, n_samples, seed, device=device)  # (n_samples,)
    root = math.sqrt(d_k)
    return (
        histogram_table(x, bins, 4.0 * root, normal_std=root),
        histogram_table(x / root, bins, 4.0, normal_std=1.0),
    )


# ---------------------------------------------------------------------------------------------
# Saturation and gradients


def saturation_table(
    dims: Sequence[int],
    n_keys: int = 16,
    seed: int = 0,
    scale: str = "sqrt",
    *,
    n_rows: int = 256,
    device: str | torch.device | None = None,
) -> pd.DataFrame:
    """How saturated a softmax row is, per d_k, unscaled and scaled by the rule ``scale``.

    Each row is one query against ``n_keys`` keys, all with N(0, 1) entries; ``n_rows``
    rows per d_k. ``scale`` is one of :data:`SCALE_RULES` (``sqrt`` divides by √d_k).
    Columns: ``d_k``, ``divisor``, then for ``unscaled`` and ``scaled``: ``entropy_*`` (mean
    nats), ``entropy_pct_*`` (% of the uniform row's log n), ``max_weight_*`` (mean largest
    weight), ``score_var_*`` (variance of the softmax input), ``score_range_*`` (mean max − min).
    """
    dims = check_int_list("dims", dims, low=1, high=MAX_D_K)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    scale = check_choice("scale", scale, SCALE_RULES)
    n_rows = check_int("n_rows", n_rows, low=2, high=MAX_SAMPLES)
    dev = new_tensor_device(device)
    out = []
    for d in dims:
        scores, _ = _row_scores(d, n_rows, n_keys, seed, dev)  # (n_rows, n_keys)
        c = _divisor(scale, d)
        row: dict[str, float] = {"d_k": d, "divisor": c}
        for name, logits in (("unscaled", scores), ("scaled", scores / c)):
            row.update({f"{k}_{name}": v for k, v in _softmax_stats(logits).items()})
        out.append(row)
    return pd.DataFrame(out)


def temperature_sweep(
    d_k: int,
    n_keys: int = 16,
    taus: Sequence[float] = (),
    seed: int = 0,
    *,
    n_rows: int = 256,
    device: str | torch.device | None = None,
) -> pd.DataFrame:
    """Mean entropy and max weight of softmax(q·k / τ) for each temperature τ in ``taus``.

    The same rows as :func:`saturation_table` at this d_k. τ = 1 is no scaling, τ = √d_k
    the usual one. Columns: ``tau``, ``entropy``, ``entropy_pct``, ``max_weight``, ``score_var``,
    ``score_range``.
    """
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    n_rows = check_int("n_rows", n_rows, low=2, high=MAX_SAMPLES)
    taus = list(taus)
    if not taus:
        raise ValueError("taus must hold at least one temperature")
    taus = [check_float(f"taus[{i}]", t, low=0.0, low_open=True) for i, t in enumerate(taus)]
    scores, _ = _row_scores(d_k, n_rows, n_keys, seed, new_tensor_device(device))  # (n_rows, n_keys)
    return pd.DataFrame([{"tau": t, **_softmax_stats(scores / t)} for t in taus])


@dataclass(frozen=True)
class RowSample:
    """One query's raw scores against ``n_keys`` keys, and what softmax makes of them.

    ``scores`` is ``(n_keys,)``; ``weights_*`` are ``(n_keys,)``; ``jacobian_*`` are
    ``(n_keys, n_keys)``, the softmax Jacobian diag(s) − ssᵀ at those weights.
    """

    d_k: int
    scores: torch.Tensor
    weights_unscaled: torch.Tensor
    weights_scaled: torch.Tensor
    jacobian_unscaled: torch.Tensor
    jacobian_scaled: torch.Tensor

    def weights_at(self, tau: float) -> torch.Tensor:
        """softmax(scores / τ), ``(n_keys,)``."""
        tau = check_float("tau", tau, low=0.0, low_open=True)
        return stable_softmax(self.scores / tau)


def sample_row(
    d_k: int, n_keys: int = 16, seed: int = 0, *, device: str | torch.device | None = None
) -> RowSample:
    """One fresh row (q and ``n_keys`` keys with N(0, 1) entries), unscaled and ÷√d_k, in float64."""
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    dev = new_tensor_device(device)
    g = _generator(seed, "row", d_k, n_keys, device=dev)
    q = torch.randn(d_k, generator=g, device=dev, dtype=torch.float64)  # (d_k,)
    k = torch.randn(n_keys, d_k, generator=g, device=dev, dtype=torch.float64)  # (n_keys, d_k)
    scores = k @ q  # (n_keys, d_k) @ (d_k,) -> (n_keys,)
    w_u = stable_softmax(scores)
    w_s = stable_softmax(scores / math.sqrt(d_k))
    return RowSample(d_k, scores, w_u, w_s, softmax_jacobian(w_u), softmax_jacobian(w_s))


def gradient_table(
    dims: Sequence[int],
    n_keys: int = 4,
    n_trials: int = 512,
    seed: int = 0,
    *,
    dead_below: float = 0.01,
    device: str | torch.device | None = None,
) -> pd.DataFrame:
    """How much gradient flows back through softmax, per d_k, unscaled and ÷√d_k.

    For each of ``n_trials`` rows (the rows of :func:`saturation_table`), a random upstream
    gradient g ~ N(0, I) is pulled back through the softmax with ``torch.autograd``:
    L = g · softmax(z), and ∂L/∂z = (diag(s) − ssᵀ) g.

    Columns, each for ``unscaled`` and ``scaled``: ``jac_diag_*``, the mean of s(1 − s) (the
    Jacobian's diagonal); ``grad_*`` and ``grad_median_*``, the mean and median over rows of
    ‖∂L/∂z‖ at the softmax input z; ``dead_*``, the share of rows passing less than
    ``dead_below`` (the scaled rows' median is about 0.27). Ratios: ``grad_ratio`` and
    ``grad_median_ratio`` (scaled / unscaled). At the scores q·k themselves the scaled model's
    gradient carries the extra 1/√d_k of the division (for the unscaled model z *is* q·k):
    ``grad_qk_median_scaled`` and ``grad_qk_median_ratio`` (÷ ``grad_median_unscaled``).
    """
    dims = check_int_list("dims", dims, low=1, high=MAX_D_K)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    n_trials = check_int("n_trials", n_trials, low=2, high=MAX_SAMPLES)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    dead_below = check_float("dead_below", dead_below, low=0.0, low_open=True)
    dev = new_tensor_device(device)
    tiny = 1e-300
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
            row[f"dead_{name}"] = float((norms < dead_below).double().mean())
            if name == "scaled":
                row["grad_qk_median_scaled"] = float(qk.grad.norm(dim=-1).median())
        row["grad_ratio"] = row["grad_scaled"] / max(row["grad_unscaled"], tiny)
        row["grad_median_ratio"] = row["grad_median_scaled"] / max(row["grad_median_unscaled"], tiny)
        row["grad_qk_median_ratio"] = row["grad_qk_median_scaled"] / max(row["grad_median_unscaled"], tiny)
        out.append(row)
    cols = ["d_k", "jac_diag_unscaled", "jac_diag_scaled", "grad_unscaled", "grad_scaled", "grad_ratio",
            "grad_median_unscaled", "grad_median_scaled", "grad_median_ratio", "dead_unscaled", "dead_scaled",
            "grad_qk_median_scaled", "grad_qk_median_ratio"]  # fmt: skip
    return pd.DataFrame(out)[cols]


# ---------------------------------------------------------------------------------------------
# Scaling strategies


def _fit_temperature(logits: torch.Tensor, target_pct: float, steps: int, lr: float) -> tuple[float, float]:
    """Fit τ in softmax(logits / τ) so the mean row entropy is ``target_pct`` % of log n.

    Gradient descent (Adam) on log τ, starting from τ = 1, minimising
    (mean entropy / log n − target)². Returns (τ, the % reached on these rows).
    """
    log_tau = torch.zeros((), dtype=torch.float64, device=logits.device, requires_grad=True)
    opt = _Optimizer([log_tau], "adam", lr)
    log_n = math.log(logits.shape[-1])
    for _ in range(steps):
        opt.zero_grad()
        w = torch.softmax(logits / log_tau.exp(), dim=-1)  # (rows, n)
        pct = -torch.special.xlogy(w, w).sum(-1).mean() / log_n
        loss = (pct - target_pct / 100.0) ** 2
        loss.backward()
        opt.step()
    tau = float(log_tau.detach().exp())
    w = stable_softmax(logits / tau)
    return tau, float(100.0 * row_entropy(w).mean() / log_n)


STRATEGY_NAMES = ("none", "√d_k", "d_k", "d_k^¼", "2√d_k", "learned τ", "cosine / τ")


def scaling_strategies(
    d_k: int,
    n: int = 16,
    seed: int = 0,
    *,
    n_rows: int = 256,
    target_entropy_pct: float = 50.0,
    fit_steps: int = 150,
    device: str | torch.device | None = None,
) -> pd.DataFrame:
    """Seven ways to set the softmax temperature, measured on the same random rows.

    Rows (``strategy``): none, √d_k, d_k, d_k^¼, 2√d_k — fixed divisors of q·k; ``learned τ``
    — a divisor fitted by ``fit_steps`` Adam steps (lr 0.1) on log τ from τ = 1 (no scaling),
    minimising (mean entropy / log n − ``target_entropy_pct``/100)² on half of the rows;
    ``cosine / τ`` — q and k L2-normalised (so q̂·k̂ ∈ [−1, 1]), divided by a τ fitted the same
    way. Every row is *measured* on the other half of the rows, which the fit never saw.

    Columns: ``strategy``, ``divisor`` (what the softmax input is q·k, or q̂·k̂, divided by),
    ``score_var``, ``score_range``, ``entropy``, ``entropy_pct``, ``max_weight``, ``how``.
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
    fit_s, test_s, fit_c, test_c = scores[:half], scores[half:], cos[:half], cos[half:]
    with _small_op_mode(scores.device):  # hundreds of tiny steps: one thread is several times faster
        tau, reached = _fit_temperature(fit_s, target, fit_steps, 0.1)
        tau_c, reached_c = _fit_temperature(fit_c, target, fit_steps, 0.1)
    fit_note = f"{fit_steps} Adam steps on log τ from τ = 1 to a {target:g}% entropy target on {half} rows"
    fixed = [
        ("none", 1.0, "q·k, raw"),
        ("√d_k", math.sqrt(d_k), "q·k / √d_k: the Transformer's choice"),
        ("d_k", float(d_k), "q·k / d_k"),
        ("d_k^¼", d_k**0.25, "q·k / d_k^¼"),
        ("2√d_k", 2 * math.sqrt(d_k), "q·k / (2√d_k)"),
    ]
    out = []
    for name, c, how in fixed:
        out.append({"strategy": name, "divisor": c, **_softmax_stats(test_s / c), "how": how})
    out.append({"strategy": "learned τ", "divisor": tau, **_softmax_stats(test_s / tau),
                "how": f"q·k / τ; {fit_note} (reached {reached:.1f}%)"})  # fmt: skip
    out.append({"strategy": "cosine / τ", "divisor": tau_c, **_softmax_stats(test_c / tau_c),
                "how": f"q̂·k̂ / τ, q and k L2-normalised; {fit_note} (reached {reached_c:.1f}%)"})  # fmt: skip
    cols = ["strategy", "divisor", "score_var", "score_range", "entropy", "entropy_pct", "max_weight", "how"]
    return pd.DataFrame(out)[cols]


# ---------------------------------------------------------------------------------------------
# Initialisation


def named_init_stds(d_model: int, d_k: int) -> dict[str, float]:
    """The usual initial stds of W_q, W_k ``(d_model, d_k)``: 1/√d_model (LeCun), Xavier, 0.01, 0.5."""
    d_model = check_int("d_model", d_model, low=1, high=MAX_D_K)
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    return {"1/√d_model": 1.0 / math.sqrt(d_model), "Xavier": xavier_std(d_model, d_k), "0.01": 0.01, "0.5": 0.5}


def init_effects(
    d_model: int,
    d_k: int,
    stds: Sequence[float] | Mapping[str, float],
    layernorm: bool = False,
    seed: int = 0,
    *,
    n_tokens: int = 256,
    device: str | torch.device | None = None,
) -> pd.DataFrame:
    """How the projections' initial std sets the scores' variance, with or without LayerNorm first.

    Token vectors x ``(n_tokens, d_model)`` have N(0, 1) entries times a per-token gain drawn
    log-uniformly from [0.5, 4] (like a residual stream whose size varies from token to token).
    With ``layernorm`` each x is normalised to mean 0, variance 1 first (no affine part).
    For each std σ, W_q, W_k ``(d_model, d_k)`` ~ N(0, σ²); q = x W_q, k = x W_k; scores = q kᵀ.
    Theory: Var(qᵢ) = d_model σ² E[x²], Var(q·k) = d_k Var(qᵢ)².

    Columns: ``init``, ``std``, ``x_var`` (E[x²] of the inputs used), ``q_var``, ``q_var_theory``,
    ``score_var_unscaled``, ``score_var_theory``, ``score_var_scaled`` (÷√d_k), ``optimal_divisor``
    (the std of the scores: dividing by it gives variance 1), ``entropy_pct_scaled`` (softmax
    over all tokens, ÷√d_k).
    """
    d_model = check_int("d_model", d_model, low=1, high=MAX_D_K)
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    n_tokens = check_int("n_tokens", n_tokens, low=2, high=MAX_KEYS)
    if isinstance(stds, Mapping):
        named = [(str(k), v) for k, v in stds.items()]
    else:
        named = [(f"{check_float('std', s, low=0.0, low_open=True):g}", s) for s in list(stds)]
    if not named:
        raise ValueError("stds must hold at least one standard deviation")
    named = [(label, check_float(f"std {label!r}", s, low=0.0, low_open=True, high=100.0)) for label, s in named]
    dev = new_tensor_device(device)
    g = _generator(seed, "init", d_model, d_k, n_tokens, device=dev)
    z = torch.randn(n_tokens, d_model, generator=g, device=dev, dtype=torch.float64)  # (n_tokens, d_model)
    gain = torch.exp(torch.empty(n_tokens, 1, dtype=torch.float64, device=dev).uniform_(  # (n_tokens, 1)
        math.log(0.5), math.log(4.0), generator=g))  # fmt: skip
    x = z * gain  # (n_tokens, d_model)
    if layernorm:
        x = F.layer_norm(x, (d_model,))  # (n_tokens, d_model)
    x_var = float((x**2).mean())
    # W ~ N(0, σ²) is σ·W₀ with W₀ ~ N(0, 1), so q = σ·(x W₀) and scores = σ²·(x W₀)(x W₀')ᵀ: one
    # projection serves every σ. W₀ is drawn a block of columns at a time into one reused buffer,
    # so a (1024 × 4096) projection never sits in memory whole.
    block = max(1, min(d_k, (1 << 18) // d_model))
    w_buf = torch.empty(d_model, block, dtype=torch.float64, device=dev)
    q0 = torch.empty(n_tokens, d_k, dtype=torch.float64, device=dev)  # (n_tokens, d_k)
    k0 = torch.empty(n_tokens, d_k, dtype=torch.float64, device=dev)  # (n_tokens, d_k)
    for proj in (q0, k0):
        for j in range(0, d_k, block):
            w = w_buf[:, : min(block, d_k - j)].normal_(generator=g)  # (d_model, b)
            proj[:, j : j + w.shape[1]] = x @ w  # (n_tokens, d_model) @ (d_model, b) -> (n_tokens, b)
    scores0 = q0 @ k0.T  # (n_tokens, d_k) @ (d_k, n_tokens) -> (n_tokens, n_tokens)
    out = []
    for label, std in named:
        q = q0 * std  # (n_tokens, d_k)
        scores = scores0 * std**2  # (n_tokens, n_tokens)
        q_theory = d_model * std**2 * x_var
        w = stable_softmax(scores / math.sqrt(d_k))  # (n_tokens, n_tokens)
        out.append(
            {
                "init": label,
                "std": std,
                "x_var": x_var,
                "q_var": float(q.var()),
                "q_var_theory": q_theory,
                "score_var_unscaled": float(scores.var()),
                "score_var_theory": d_k * q_theory**2,
                "score_var_scaled": float(scores.var()) / d_k,
                "optimal_divisor": float(scores.std()),
                "entropy_pct_scaled": float(100.0 * row_entropy(w).mean() / math.log(n_tokens)),
            }
        )
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------------------------
# Numerical stability

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}


def overflow_limit(dtype: str) -> float:
    """The largest x whose exp(x) is finite in ``dtype``: log of the largest finite number."""
    dtype = check_choice("dtype", dtype, DTYPES)
    return math.log(torch.finfo(DTYPES[dtype]).max)


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """exp(x) / Σ exp(x) along the last dim, with no max subtracted: overflows for large x."""
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_overflow(logits: torch.Tensor, dtypes: Sequence[str] = ("float32", "float16")) -> pd.DataFrame:
    """The naive and the max-subtracted softmax of the same ``logits (n,)`` in each dtype.

    Both run in the dtype itself (as a kernel would), on the logits rounded to it; the
    reference is float64's softmax of those rounded logits. Columns: ``dtype``, ``index``,
    ``logit``, ``exp_naive`` (exp(x) in the dtype: inf once x passes :func:`overflow_limit`),
    ``naive``, ``stable``, ``reference``, ``naive_finite``, ``stable_finite``.
    """
    check_tensor("logits", logits, min_dim=1)
    if logits.dim() != 1 or not 1 <= logits.numel() <= MAX_KEYS:
        raise ValueError(f"logits must be 1-D with 1 to {MAX_KEYS} entries, got shape {tuple(logits.shape)}")
    names = [check_choice("dtype", d, DTYPES) for d in dtypes]
    if not names:
        raise ValueError("dtypes must name at least one dtype")
    out = []
    for name in names:
        x = logits.to(DTYPES[name])  # may round (or overflow to ±inf in float16)
        e = torch.exp(x)
        naive = naive_softmax(x)
        stable = stable_softmax(x) if bool(torch.isfinite(x).all()) else torch.full_like(x, float("nan"))
        ref = torch.softmax(x.double(), dim=-1)
        out.append(
            pd.DataFrame(
                {
                    "dtype": name,
                    "index": np.arange(x.numel()),
                    "logit": x.double().cpu().numpy(),
                    "exp_naive": e.double().cpu().numpy(),
                    "naive": naive.double().cpu().numpy(),
                    "stable": stable.double().cpu().numpy(),
                    "reference": ref.cpu().numpy(),
                    "naive_finite": torch.isfinite(naive).cpu().numpy(),
                    "stable_finite": torch.isfinite(stable).cpu().numpy(),
                }
            )
        )
    return pd.concat(out, ignore_index=True)


def overflow_logits(magnitude: float, n: int = 8, *, device: str | torch.device | None = None) -> torch.Tensor:
    """``n`` logits evenly spaced from +magnitude down to −magnitude, float64 ``(n,)``."""
    magnitude = check_float("magnitude", magnitude, low=0.0, high=1e6)
    n = check_int("n", n, low=2, high=MAX_KEYS)
    return torch.linspace(magnitude, -magnitude, n, dtype=torch.float64, device=new_tensor_device(device))


def overflow_sweep(magnitudes: Sequence[float], dtype: str = "float32", n: int = 8) -> pd.DataFrame:
    """Naive against stable softmax as the logits grow: ``n`` logits in [−m, m] for each m.

    Columns: ``magnitude``, ``naive_error`` and ``stable_error`` (largest |weight − float64
    reference|; NaN when that softmax gave NaN), ``naive_nan``, ``exp_overflow`` (exp of the
    largest logit is inf in ``dtype``).
    """
    dtype = check_choice("dtype", dtype, DTYPES)
    mags = [check_float(f"magnitudes[{i}]", m, low=0.0, high=1e6) for i, m in enumerate(magnitudes)]
    if not mags:
        raise ValueError("magnitudes must hold at least one value")
    out = []
    for m in mags:
        t = softmax_overflow(overflow_logits(m, n), (dtype,))
        naive_err = (t["naive"] - t["reference"]).abs().max(skipna=False)
        stable_err = (t["stable"] - t["reference"]).abs().max(skipna=False)
        out.append(
            {
                "magnitude": m,
                "naive_error": float(naive_err),
                "stable_error": float(stable_err),
                "naive_nan": bool(t["naive"].isna().any()),
                "exp_overflow": bool(np.isinf(t["exp_naive"]).any()),
            }
        )
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------------------------
# Training a tiny retrieval model

def train_toy(
    scaled: bool,
    d_k: int = 64,
    *,
    d_model: int = 16,
    n_keys: int = 8,
    d_v: int = 8,
    batch: int = 32,
    steps: int = 200,
    optimizer: str = "adam",
    lr: float | None = None,
    init_std: float | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Train a one-head, attention-only model to retrieve a value, with or without ÷√d_k.

    The task: each example has ``n_keys`` tokens x_j ``(d_model,)`` with values v_j ``(d_v,)``,
    all N(0, 1) and fresh every step. The query token is x_t A for a target t chosen at random,
    where A is a fixed random rotation, so the model has to *learn* W_q, W_k ``(d_model, d_k)``
    that make q·k_t stand out. The output is softmax(q Kᵀ / c) V with c = √d_k (``scaled``) or 1,
    and the loss is the mean squared error between that output and v_t: it sits on the attention
    output, so every gradient passes through the softmax Jacobian. Uniform weights give a loss of
    about (n−1)/n; a confident wrong pick about 2(n−1)/n.

    W_q and W_k start at N(0, ``init_std``²) (default 1/√d_model); ``optimizer`` is ``adam`` or
    ``sgd``, ``lr`` defaults to :data:`DEFAULT_LR`. The same ``seed`` gives the same start and the
    same data whether or not ``scaled``, so the two runs differ only in the scaling.
    ``progress(step, steps)`` is called after each step.

    Returns one row per step: ``step``, ``loss``, ``accuracy`` (largest weight on the target),
    ``grad_scores`` (‖∂L/∂(q·k)‖), ``grad_logits`` (‖∂L/∂z‖ at the softmax input z = q·k / c)
    ``logit_std`` (std of z: how saturated the softmax is), and ``loss_smooth`` and
    ``grad_scores_smooth``, averages over the last :data:`SMOOTH` steps (each step sees a fresh
    batch, so the raw values are noisy).
    """
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    d_model = check_int("d_model", d_model, low=1, high=4096)
    n_keys = check_int("n_keys", n_keys, low=2, high=MAX_KEYS)
    d_v = check_int("d_v", d_v, low=1, high=4096)
    batch = check_int("batch", batch, low=1, high=4096)
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
    opt = _Optimizer([w_q, w_k], optimizer, lr)
    c = math.sqrt(d_k) if scaled else 1.0
    rows = torch.arange(batch, device=dev)
    history = torch.zeros(steps, 5, dtype=torch.float64)
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
                history[step] = torch.stack(
                    [
                        loss.detach().double().cpu(),
                        (weights.argmax(-1) == target).double().mean().cpu(),
                        scores.grad.norm().double().cpu(),
                        logits.grad.norm().double().cpu(),
                        logits.std().double().cpu(),
                    ]
                )
            if progress is not None:
                progress(step + 1, steps)
    h = history.numpy()
    return pd.DataFrame(
        {
            "step": np.arange(steps),
            "loss": h[:, 0],
            "accuracy": h[:, 1],
            "grad_scores": h[:, 2],
            "grad_logits": h[:, 3],
            "logit_std": h[:, 4],
            "loss_smooth": pd.Series(h[:, 0]).rolling(SMOOTH, min_periods=1).mean().to_numpy(),
            "grad_scores_smooth": pd.Series(h[:, 2]).rolling(SMOOTH, min_periods=1).mean().to_numpy(),
        }
    )


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
