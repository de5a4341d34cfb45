"""How much memory each route needs at n: a model to check against a cap before running.

Every estimate is the peak memory a call adds beyond its inputs q, k, v ``(B, H, n, d)``, output
included, as the code of each route allocates it, plus what the route holds between calls (the
dense mask of ``"sdpa-masked"``, Linformer's projections), which a measured peak of one call does
not see. The benchmark script prints each beside the peak it measures: within 20 % on this CPU.

On Streamlit Community Cloud (≈ 2.7 GB in all, the app itself ≈ 1 GB) the benchmark's cap is
640 MiB (:func:`attention_core.bench.measure.default_cap_bytes`), and :func:`memory_guard`
turns "past the cap" into a sentence for the page.

The routes:

- ``"sdpa"``: torch's fused SDPA, full attention, no mask (the benchmark's own model);
- ``"sdpa-masked"``: torch SDPA with the pattern as a dense ``(n, n)`` bool mask, which torch
  turns into a float mask of the inputs' dtype first;
- ``"dense"``: this project's core with the dense mask: the scores and the weights, n² each;
- ``"flex-window"``: compiled FlexAttention: the output, a row statistic, and a block mask of
  (n/128)² tile indices; the n × n scores never exist;
- ``"linear"``, ``"performer"``: feature maps of n × d (linear) or n × m (Performer) per head;
  the causal forms add a chunk × chunk square per chunk and a (d or m) × d state per chunk;
- ``"linformer"``: the projections ``(rank, n)``, the projected keys and values, and an
  ``(n, rank)`` score matrix and its softmax.
"""

from __future__ import annotations

import math

from ..validation import check_choice, check_int
from .linear import DEFAULT_CHUNK
from .patterns import FLEX_BLOCK

MEMORY_ROUTES = ("sdpa", "sdpa-masked", "dense", "flex-window", "linear", "performer", "linformer")
_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}


def route_extra_bytes(
    route: str, n: int, *, heads: int = 8, d: int = 64, batch: int = 1, dtype: str = "float32",  # the inputs
    features: int = 256, rank: int = 256, is_causal: bool = False, chunk: int = DEFAULT_CHUNK,  # the routes' own
) -> int:  # fmt: skip
    """Predicted peak bytes beyond the inputs for one call of ``route`` on ``(batch, heads, n, d)``."""
    route = check_choice("route", route, MEMORY_ROUTES)
    n = check_int("n", n, low=1, high=1 << 22)
    bh = check_int("batch", batch, low=1) * check_int("heads", heads, low=1)
    d = check_int("d", d, low=1)
    item = _ITEMSIZE[check_choice("dtype", dtype, _ITEMSIZE)]
    rows = bh * n * d * item  # one (B, H, n, d) tensor: the output's size
    square = bh * n * n * item  # one (B, H, n, n) tensor
    if route == "sdpa":
        from ..bench.impls import IMPLEMENTATIONS, BenchConfig  # lazy: the bench package is large

        config = BenchConfig("sdpa", n, d=d, heads=heads, batch=batch, dtype=dtype, causal=is_causal)
        return IMPLEMENTATIONS["sdpa"].extra_bytes(config)
    if route == "sdpa-masked":
        return n * n + n * n * item + rows + bh * n * 4  # bool mask, its float copy, output, row statistic
    if route == "dense":
        return 2 * square + 2 * n * n + rows  # scores and weights; the bool mask and its inverse
    if route == "flex-window":
        tiles = math.ceil(n / FLEX_BLOCK) ** 2
        return rows + bh * n * 4 + 8 * tiles * 4  # output, log-sum-exp, tile counts and indices (int32)
    if route == "linformer":
        r = check_int("rank", rank, low=1, high=n)
        # E and F (held between calls), E·K and F·V, then the (n, rank) scores and their softmax
        return 2 * r * n * item + 2 * bh * r * d * item + 2 * bh * n * r * item
    width = d if route == "linear" else check_int("features", features, low=1)
    c = min(check_int("chunk", chunk, low=1), n)
    maps = 2 * bh * n * width * item  # φ(q) and φ(k)
    # Building them: linear's elu is elementwise; the Performer holds φ(q) while φ(k)'s projection,
    # exponent, shifted exponent and exp are alive at once, and q and k times √scale.
    build = maps if route == "linear" else 5 * maps // 2 + 2 * rows
    if not is_causal:
        return max(build, maps + 2 * rows + bh * width * d * item)  # + φ(q)·S, the output, S (width, d)
    chunks = math.ceil(n / c)
    padded = 2 * bh * chunks * c * width * item + bh * chunks * c * d * item  # padded copies of φ(q), φ(k), v
    states = 3 * bh * chunks * width * d * item  # each chunk's φ(k)ᵀv, their cumulative sum, shifted
    local = 2 * bh * chunks * c * c * item  # the chunk squares, before and after masking
    return max(build, maps + padded + states + local + 2 * rows)


def memory_guard(route: str, n: int, *, cap_bytes: int | None = None, **shape: object) -> str | None:
    """``None`` when ``route`` at ``n`` fits under ``cap_bytes`` (default: the benchmark's cap for this
    machine), else a sentence saying what it needs. ``shape``: as :func:`route_extra_bytes`."""
    from ..bench.measure import default_cap_bytes, format_bytes

    cap = default_cap_bytes("cpu") if cap_bytes is None else check_int("cap_bytes", cap_bytes, low=1)
    need = route_extra_bytes(route, n, **shape)  # type: ignore[arg-type]
    if need <= cap:
        return None
    return f"{route} at n = {n} needs about {format_bytes(need)}, more than the memory cap of {format_bytes(cap)}"


def largest_n(route: str, cap_bytes: int, *, n_max: int = 1 << 20, **shape: object) -> int:
    """The largest power of two n ≤ ``n_max`` at which ``route`` fits in ``cap_bytes`` (0 if none)."""
    cap_bytes = check_int("cap_bytes", cap_bytes, low=1)
    best, n = 0, 1
    while n <= n_max and route_extra_bytes(route, n, **shape) <= cap_bytes:  # type: ignore[arg-type]
        best, n = n, n * 2
    return best
