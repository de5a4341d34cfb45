"""The variance of q·k against d_k, before and after ÷√d_k: Var(q·k) = d_k, Var(q·k / √d_k) = 1."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import torch

from ..device import new_tensor_device, one_thread
from ..validation import check_choice, check_float, check_int, check_int_list, check_tensor
from ._sampling import MAX_D_K, MAX_SAMPLES, _fill, _generator

DEFAULT_SAMPLES = 20_000  # relative std. error of the variance ≈ √(2/n) ≈ 1% (2% at d_k = 1)
INITS = ("normal", "uniform", "rademacher")
# Entries drawn per block: q, k and their products (1.5 MB) stay in a CPU's cache between the passes over
# them. Drawn on one intra-op thread: the generator runs at full speed on one, and on a busy 2-core server
# two threads contending took 3-10× as long (benchmarks of this change, 20,000 samples up to d_k = 4096).
_BLOCK = 1 << 17


def prefix_dot_products(
    dims: Sequence[int], n_samples: int = DEFAULT_SAMPLES, seed: int = 0, *, init: str = "normal",
    device: str | torch.device | None = None,
) -> torch.Tensor:  # fmt: skip
    """q·k of ``n_samples`` independent pairs q, k at every width in ``dims``, from one draw of the widest.

    ``init`` is the entries' distribution: ``normal``, ``uniform`` (on [−√3, √3]) or ``rademacher`` (±1),
    all of variance 1, so Var(q·k) = d_k. Column j is the dot product of the first ``dims[j]`` entries: the
    columns are correlated (Cov = min(d_a, d_b)), each on its own an honest sample at its width. Entries
    [0, 1), [1, 2), [2, 4), [4, 8) … come from generators seeded by (seed, block), so a width's numbers do
    not depend on the other widths asked for. Returns float32 ``(n_samples, len(dims))``.
    """
    dims = check_int_list("dims", dims, low=1, high=MAX_D_K)
    n_samples = check_int("n_samples", n_samples, low=2, high=MAX_SAMPLES)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    init = check_choice("init", init, INITS)
    dev = new_tensor_device(device)
    width = max(dims)
    # One pair of flat buffers refilled block after block (see _row_scores for why not fresh tensors).
    q_buf = torch.empty(min(_BLOCK, n_samples * width), device=dev)
    k_buf = torch.empty_like(q_buf)
    at: dict[int, torch.Tensor] = {}
    before = torch.zeros(n_samples, device=dev)  # q·k over the entries [0, start)
    start = 0
    with one_thread(dev):
        while start < width:
            end = max(1, 2 * start)
            w, g = end - start, _generator(seed, "dot", init, start, device=dev)
            cuts = sorted({d - start for d in dims if start < d <= end} | {w})
            per_block = max(1, min(n_samples, _BLOCK // w))
            sums: dict[int, list[torch.Tensor]] = {c: [] for c in cuts}
            for r0 in range(0, n_samples, per_block):
                r = min(per_block, n_samples - r0)
                q = _fill(q_buf[: r * w].view(r, w), init, g)  # (r, w)
                prods = q.mul_(_fill(k_buf[: r * w].view(r, w), init, g))  # (r, w)
                for c in cuts:
                    sums[c].append(prods[:, :c].sum(dim=-1))  # (r,)
            for c in cuts:
                at[start + c] = before + torch.cat(sums[c])  # (n_samples,)
            before, start = at[end], end
    return torch.stack([at[d] for d in dims], dim=-1)  # (n_samples, len(dims))


def variance_table(
    dims: Sequence[int], n_samples: int = DEFAULT_SAMPLES, seed: int = 0, init: str = "normal",
    *, device: str | torch.device | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Var(q·k) measured against its theory, d_k, before and after ÷√d_k.

    Columns: ``d_k``, ``theoretical_var`` (= d_k), ``empirical_var``, ``empirical_std``, ``rel_error`` (empirical /
    theory − 1), ``scaled_var`` (of q·k/√d_k, theory 1), ``abs_p95`` (95% of |q·k| lie below it) and
    ``scaled_abs_p95``. Every width comes from one draw of the widest (:func:`prefix_dot_products`).
    """
    dims = check_int_list("dims", dims, low=1, high=MAX_D_K)
    samples = prefix_dot_products(dims, n_samples, seed, init=init, device=device).double().cpu()  # (n, len(dims))
    d = torch.tensor(dims, dtype=torch.float64)  # (len(dims),)
    var = torch.stack([x.var() for x in samples.T])  # (len(dims),); column by column, as each width alone gives
    p95 = torch.quantile(samples.abs(), 0.95, dim=0)  # (len(dims),)
    columns = {"theoretical_var": d, "empirical_var": var, "empirical_std": var.sqrt(), "rel_error": var / d - 1.0,
               "scaled_var": var / d, "abs_p95": p95, "scaled_abs_p95": p95 / d.sqrt()}
    return pd.DataFrame({"d_k": dims, **{name: column.numpy() for name, column in columns.items()}})


def histogram_table(samples: torch.Tensor, span: float, normal_std: float, bins: int = 60) -> pd.DataFrame:
    """Counts of ``samples (n,)`` in ``bins`` equal bins over [−span, span]; samples outside are left out.

    Columns: ``center``, ``count``, ``density`` (count / (n · width), comparable with a pdf) and ``normal_pdf``,
    the N(0, normal_std²) density at each centre (the central-limit approximation of q·k).
    """
    check_tensor("samples", samples, min_dim=1)
    span = check_float("span", span, low=0.0, low_open=True)
    sd = check_float("normal_std", normal_std, low=0.0, low_open=True)
    bins = check_int("bins", bins, low=2, high=10_000)
    x = samples.detach().double().flatten().cpu()
    if x.numel() < 2:
        raise ValueError(f"samples must hold at least 2 values, got {x.numel()}")
    counts = torch.histc(x, bins=bins, min=-span, max=span)  # (bins,)
    width = 2 * span / bins
    centers = -span + width * (torch.arange(bins, dtype=torch.float64) + 0.5)  # (bins,)
    pdf = torch.exp(-0.5 * (centers / sd) ** 2) / (sd * math.sqrt(2 * math.pi))  # (bins,)
    columns = {"center": centers, "count": counts, "density": counts / (x.numel() * width), "normal_pdf": pdf}
    return pd.DataFrame({name: column.numpy() for name, column in columns.items()})


def dot_product_histograms(
    d_k: int, n_samples: int = DEFAULT_SAMPLES, seed: int = 0, bins: int = 60,
    *, device: str | torch.device | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:  # fmt: skip
    """Histograms of q·k and of q·k/√d_k (the same samples as :func:`variance_table` at this d_k).

    Each is a :func:`histogram_table` over ±4 theoretical std devs (±4√d_k and ±4) with the
    normal approximation N(0, d_k), N(0, 1) in ``normal_pdf``.
    """
    d_k = check_int("d_k", d_k, low=1, high=MAX_D_K)
    x = prefix_dot_products([d_k], n_samples, seed, device=device)[:, 0]  # (n_samples,)
    root = math.sqrt(d_k)
    return histogram_table(x, 4.0 * root, root, bins), histogram_table(x / root, 4.0, 1.0, bins)
