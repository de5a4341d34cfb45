"""What each route costs against dense SDPA, measured: time and peak memory against n.

Each route is prepared outside the timing (inputs, the dense mask, FlexAttention's block mask
and compile, the Performer's random features, Linformer's projections: what a model holds
between calls), then timed with the benchmark's own :func:`attention_core.bench.measure.time_call`
(``blocked_autorange`` on the CPU, CUDA events on a GPU; the median after a warm-up) and its
peak memory read with :func:`attention_core.bench.measure.measure_peak_extra`.

From the times, :meth:`CostCurves.crossover` gives the n from which a route is faster than SDPA
and :meth:`CostCurves.slope` its log-log slope (1 for linear time, 2 for quadratic).

The routes (:data:`ROUTES`): ``"sdpa"`` (full attention, the baseline), ``"sdpa-masked"``
(SDPA with the window as a dense mask), ``"flex-window"`` (the window under compiled
FlexAttention; where it cannot compile, the point says so and nothing is timed), ``"linear"``,
``"performer"``, ``"linformer"``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch
import torch.nn.functional as F

from ..device import resolve_device
from ..validation import check_choice, check_float, check_int, check_int_list
from .accuracy import random_qkv
from .flex import FlexUnavailable, flex_plan
from .linear import linear_attention
from .lowrank import linformer_attention, linformer_projections
from .memory import route_extra_bytes
from .patterns import and_masks, causal, dense_mask, sliding_window
from .performer import favor_attention, orthogonal_features

ROUTES = ("sdpa", "sdpa-masked", "flex-window", "linear", "performer", "linformer")
BASELINE = "sdpa"
DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class RouteParams:
    """The knobs of the routes: ``window`` (flex-window, sdpa-masked), ``features`` (performer),
    ``rank`` (linformer; n when n is smaller), ``seed``, ``is_causal`` (every route)."""

    window: int = 256
    features: int = 256
    rank: int = 256
    seed: int = 0
    is_causal: bool = False

    def __post_init__(self) -> None:
        check_int("window", self.window, low=1, high=1 << 20)
        check_int("features", self.features, low=1, high=1 << 16)
        check_int("rank", self.rank, low=1, high=1 << 20)
        check_int("seed", self.seed, low=0, high=2**63 - 1)
        if not isinstance(self.is_causal, bool):
            raise ValueError(f"is_causal must be True or False, got {self.is_causal!r}")

    def label(self, route: str) -> str:
        """The route named with its parameters, e.g. ``"flex-window(256)"``."""
        arg = {"flex-window": self.window, "sdpa-masked": self.window, "performer": self.features,
               "linformer": self.rank}.get(route)  # fmt: skip
        return route if arg is None else f"{route}({arg})"


@dataclass(frozen=True)
class Prepared:
    """A route ready to time: ``call()`` runs it once. ``backend`` says what runs; ``prepare_s`` the
    seconds spent preparing (the block mask, the features); ``compile_s`` FlexAttention's first
    compile in this process (``compiled_now``: paid here)."""

    call: Callable[[], torch.Tensor]
    backend: str
    prepare_s: float = 0.0
    compile_s: float | None = None
    compiled_now: bool = False
    sparsity: float | None = None


def prepare_route(route: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, params: RouteParams) -> Prepared:
    """Set ``route`` up on ``(B, H, n, d)`` inputs; raises :class:`.flex.FlexUnavailable` for
    ``"flex-window"`` where it cannot compile."""
    route = check_choice("route", route, ROUTES)
    n = q.shape[-2]
    started = time.perf_counter()
    if route == "sdpa":
        causal_flag = params.is_causal
        return Prepared(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal_flag), "torch SDPA")
    window = sliding_window(params.window)
    pattern = and_masks(window, causal()) if params.is_causal else window
    if route == "sdpa-masked":
        mask = dense_mask(pattern, n, n, device=q.device)  # (n, n) bool
        return Prepared(
            lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
            "torch SDPA, dense bool mask",
            time.perf_counter() - started,
        )
    if route == "flex-window":
        plan = flex_plan(q, k, v, pattern)
        return Prepared(
            lambda: plan.run(q, k, v),
            "FlexAttention, compiled, block-sparse",
            plan.block_mask_s,
            plan.compile_s,
            plan.compiled_now,
            plan.sparsity,
        )
    if route == "linear":
        return Prepared(lambda: linear_attention(q, k, v, is_causal=params.is_causal), "linear attention (elu + 1)")
    if route == "performer":
        w = orthogonal_features(params.features, q.shape[-1], seed=params.seed, device=q.device, dtype=q.dtype)
        return Prepared(
            lambda: favor_attention(q, k, v, w, is_causal=params.is_causal),
            f"FAVOR+, {params.features} features",
            time.perf_counter() - started,
        )
    if params.is_causal:
        raise ValueError("Linformer has no causal form")
    rank = min(params.rank, n)
    ef = linformer_projections(rank, n, seed=params.seed, device=q.device, dtype=q.dtype)
    return Prepared(
        lambda: linformer_attention(q, k, v, projection=ef), f"Linformer, rank {rank}", time.perf_counter() - started
    )


@dataclass(frozen=True)
class RoutePoint:
    """One route at one n. ``status``: ``"ok"``, ``"skipped"`` (memory cap or time budget),
    ``"n/a"`` (cannot run here, e.g. no compiler for FlexAttention) or ``"error"``; ``note`` says why."""

    route: str
    label: str
    n: int
    status: str
    note: str = ""
    median_ms: float | None = None
    iqr_ms: float | None = None
    samples: int = 0
    peak_bytes: int | None = None
    predicted_bytes: int | None = None
    backend: str = ""
    prepare_s: float | None = None
    compile_s: float | None = None
    compiled_now: bool = False
    sparsity: float | None = None


def measure_route(
    route: str,
    n: int,
    *,
    params: RouteParams | None = None,
    heads: int = 8,
    d: int = 64,
    batch: int = 1,
    dtype: str = "float32",
    device: str | torch.device | None = "cpu",
    min_run_time: float = 0.2,
    min_samples: int = 3,
    memory: bool = True,
    cap_bytes: int | None = None,
    deadline: float | None = None,
) -> RoutePoint:
    """Time (and measure the peak memory of) ``route`` at ``n`` on random ``(batch, heads, n, d)`` inputs.

    Skipped, with the reason, when its predicted memory passes ``cap_bytes`` (default: the
    benchmark's cap for this machine) or ``deadline`` (a ``time.perf_counter()`` value) has passed.
    """
    from ..bench.measure import default_cap_bytes, format_bytes, measure_peak_extra, time_call

    params = RouteParams() if params is None else params
    route = check_choice("route", route, ROUTES)
    n = check_int("n", n, low=1, high=1 << 20)
    dtype = check_choice("dtype", dtype, DTYPES)
    min_run_time = check_float("min_run_time", min_run_time, low=0.0)
    dev = resolve_device(device)
    label = params.label(route)
    predicted = route_extra_bytes(
        route, n, heads=heads, d=d, batch=batch, dtype=dtype,
        features=params.features, rank=min(params.rank, n), is_causal=params.is_causal,
    )  # fmt: skip
    cap = default_cap_bytes(dev) if cap_bytes is None else check_int("cap_bytes", cap_bytes, low=1)
    point = {"route": route, "label": label, "n": n, "predicted_bytes": predicted}
    if predicted > cap:
        why = f"needs ≈ {format_bytes(predicted)} > cap {format_bytes(cap)}"
        return RoutePoint(**point, status="skipped", note=why)
    if deadline is not None and time.perf_counter() > deadline:
        return RoutePoint(**point, status="skipped", note="the time budget ran out")
    q, k, v = random_qkv(n, d, heads=heads, batch=batch, seed=params.seed, device=dev, dtype=DTYPES[dtype])
    try:
        prepared = prepare_route(route, q, k, v, params)
    except FlexUnavailable as exc:
        return RoutePoint(**point, status="n/a", note=exc.reason)
    try:
        prepared.call()  # warm-up
        peak = None
        if memory:
            peak, _how = measure_peak_extra(prepared.call, dev)
        timing = time_call(prepared.call, dev, min_run_time=min_run_time, min_samples=min_samples, deadline=deadline)
    except (RuntimeError, MemoryError) as exc:
        return RoutePoint(**point, status="error", backend=prepared.backend, note=str(exc).splitlines()[0][:200])
    setup = {f.name: getattr(prepared, f.name) for f in fields(Prepared) if f.name != "call"}  # backend, prepare_s …
    return RoutePoint(
        **point, **setup, status="ok", median_ms=timing.median * 1e3, iqr_ms=timing.iqr * 1e3,
        samples=len(timing.samples), peak_bytes=peak,
    )  # fmt: skip


@dataclass(frozen=True)
class CostCurves:
    """Points of several routes over several n, with SDPA as the baseline."""

    points: tuple[RoutePoint, ...]

    def routes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.route for p in self.points))

    def times(self, route: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """The n and median ms of ``route``'s measured points, n ascending."""
        ok = sorted((p for p in self.points if p.route == route and p.status == "ok"), key=lambda p: p.n)
        return tuple(p.n for p in ok), tuple(float(p.median_ms) for p in ok)  # type: ignore[arg-type]

    def crossover(self, route: str, baseline: str = BASELINE) -> int | None:
        """The smallest measured n from which ``route`` is faster than ``baseline`` at every larger
        n measured for both; ``None`` if it is not faster at the largest."""
        ns, ms = self.times(route)
        base = dict(zip(*self.times(baseline), strict=True))
        shared = [(n, t, base[n]) for n, t in zip(ns, ms, strict=True) if n in base]
        return crossover_n([n for n, _, _ in shared], [t for _, t, _ in shared], [b for _, _, b in shared])

    def slope(self, route: str, min_n: int = 512) -> float | None:
        """Log-log slope of ``route``'s time over the measured n ≥ ``min_n`` (``None`` with fewer than two)."""
        from ..bench.fits import fit_loglog_slope

        ns, ms = self.times(route)
        pairs = [(n, t) for n, t in zip(ns, ms, strict=True) if n >= min_n]
        if len({n for n, _ in pairs}) < 2:
            return None
        return fit_loglog_slope([n for n, _ in pairs], [t for _, t in pairs])[0]


def crossover_n(ns: Sequence[int], route_ms: Sequence[float], baseline_ms: Sequence[float]) -> int | None:
    """The smallest n (ascending ``ns``) from which the route is faster than the baseline at every
    larger n; ``None`` when it is not faster at the largest."""
    if not (len(ns) == len(route_ms) == len(baseline_ms)):
        raise ValueError("ns, route_ms and baseline_ms must have one length")
    found = None
    for n, t, b in sorted(zip(ns, route_ms, baseline_ms, strict=True), reverse=True):
        if t >= b:
            break
        found = n
    return found


def measure_routes(
    routes: Sequence[str],
    ns: Sequence[int],
    *,
    params: RouteParams | None = None,
    budget_s: float | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_point: Callable[[RoutePoint], Any] | None = None,
    **options: Any,
) -> CostCurves:
    """:func:`measure_route` for every n (ascending) and route, SDPA always included first at each n.

    ``budget_s`` bounds the whole run (later points are marked skipped); ``should_stop()`` is
    asked before each point (a page's cancel button); ``on_point`` sees each point as it lands.
    ``options`` go to :func:`measure_route` (heads, d, dtype, device, min_run_time, memory …).
    """
    names = list(dict.fromkeys([BASELINE, *(check_choice("route", r, ROUTES) for r in routes)]))
    sizes = sorted(set(check_int_list("ns", ns, low=1, high=1 << 20)))
    deadline = None if budget_s is None else time.perf_counter() + check_float("budget_s", budget_s, low=0.0)
    points = []
    for n in sizes:
        for route in names:
            if should_stop is not None and should_stop():
                return CostCurves(tuple(points))
            point = measure_route(route, n, params=params, deadline=deadline, **options)
            points.append(point)
            if on_point is not None:
                on_point(point)
    return CostCurves(tuple(points))
