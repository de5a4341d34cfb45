"""What the √d_k explorer's measurements share: limits, seeded generators, random rows, softmax stats."""

from __future__ import annotations

import contextlib
import math
import zlib
from collections.abc import Iterator

import numpy as np
import torch

from ..attention import row_entropy, stable_softmax
from ..device import one_thread
from ..validation import check_tensor

MAX_D_K = 1 << 16
MAX_SAMPLES = 1_000_000
MAX_KEYS = 4096
_CHUNK = 1 << 21  # elements per generated block: memory stays bounded whatever d_k × samples


@contextlib.contextmanager
def _small_op_mode(device: torch.device) -> Iterator[None]:
    """Run many tiny CPU ops fast: one intra-op thread (:func:`~attention_core.device.one_thread`), denormals
    flushed to zero. A saturated softmax makes gradients of ~1e-40, denormal floats 10-100× slower on CPUs;
    flushing them (as GPU fast paths do) changes nothing visible."""
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


def _row_scores(
    d_k: int, n_rows: int, n_keys: int, seed: int, device: torch.device, *, cosine: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Float64 raw scores ``(n_rows, n_keys)`` of ``n_rows`` independent queries against their own ``n_keys`` keys, all
    N(0, 1), and with ``cosine`` their cosine similarities ``(n_rows, n_keys)``."""
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


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """∂softmax/∂z = diag(s) − s sᵀ for each row ``s`` of ``weights (..., n)``. Returns ``(..., n, n)``.

    A one-hot (saturated) row makes every entry ≈ 0: almost no gradient passes."""
    check_tensor("weights", weights, min_dim=1)
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)  # (..., n, n)


def entropy_pct(weights: torch.Tensor) -> torch.Tensor:
    """Entropy of each row of ``weights (..., n)`` as a percentage of the uniform row's, log n. Returns ``(...)``."""
    h = row_entropy(weights)  # (...)
    if weights.shape[-1] < 2:
        raise ValueError(f"weights must have at least 2 entries per row, got shape {tuple(weights.shape)}")
    return 100.0 * h / math.log(weights.shape[-1])


def _softmax_stats(logits: torch.Tensor) -> dict[str, float]:
    """Mean entropy, mean entropy as % of log n, mean max weight, variance and mean range of ``(rows, n)``."""
    w = stable_softmax(logits, dim=-1)  # (rows, n)
    return {
        "entropy": float(row_entropy(w).mean()),
        "entropy_pct": float(entropy_pct(w).mean()),
        "max_weight": float(w.amax(dim=-1).mean()),
        "score_var": float(logits.var()),
        "score_range": float((logits.amax(dim=-1) - logits.amin(dim=-1)).mean()),
    }
