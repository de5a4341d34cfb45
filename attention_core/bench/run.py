"""Run one configuration: guard, warm up, measure, check, record; and write the rows out.

Each configuration ends as one :class:`BenchResult` whose ``status`` says what happened:

- ``ok``: timed and measured;
- ``n/a``: the implementation cannot run on this device, dtype or shape, or has no backward pass
  for a mode that needs one (the note says why; a forced SDPA kernel that refuses the inputs, or
  their backward, says "not available for these inputs: <torch's reason>");
- ``skipped``: the memory guard or the time budget refused it before anything was allocated;
- ``oom``: it was tried and ran out of memory;
- ``cancelled``: the caller asked the sweep to stop;
- ``error``: anything else torch raised, with its first line as the note.
"""

from __future__ import annotations

import csv
import gc
import re
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import IO, Any

import torch

from ..validation import check_int
from .config import BenchConfig
from .impls import get_impl
from .measure import default_cap_bytes, guard_reason, measure_peak_extra, time_call
from .passes import config_call

MIN_SAMPLES = 3  # timed calls per configuration; fewer only when the time budget runs out


@dataclass(frozen=True, kw_only=True)
class BenchResult(BenchConfig):
    """One row of the results table and of the CSV: a configuration and what it measured (``peak_bytes``
    and ``predicted_bytes`` are beyond the inputs; ``None`` where not measured)."""

    median_ms: float | None = None
    iqr_ms: float | None = None
    peak_bytes: int | None = None
    predicted_bytes: int
    gflops: float | None = None
    status: str
    pct_of_peak: float | None = None
    samples: int = 0
    max_error: float | None = None
    err_dq: float | None = None  # dQ, dK, dV: max |gradient − float64 autograd's| (modes with a backward)
    err_dk: float | None = None
    err_dv: float | None = None
    backend: str = ""
    memory_source: str = ""
    note: str = ""


# The CSV's columns in the order they have always had (scripts read them): the configuration, what was measured,
# and kv_heads, which came last.
_MEASURED = tuple(f.name for f in fields(BenchResult))[len(fields(BenchConfig)) :]  # median_ms … note
CSV_COLUMNS = ("impl", "device", "dtype", "batch", "heads", "n", "d", "causal", "mode", *_MEASURED, "kv_heads")


def _result(config: BenchConfig, predicted: int, status: str, note: str = "", **values: Any) -> BenchResult:
    return BenchResult(**asdict(config), predicted_bytes=predicted, status=status, note=note, **values)


def is_oom(exc: BaseException) -> bool:
    """torch's and Python's out-of-memory errors, and the CPU allocator's RuntimeError."""
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


NOT_AVAILABLE = "not available for these inputs"  # a forced kernel's note, with torch's reason: never an error


def _torch_says(message: Warning | str) -> str:
    """A torch warning without its "(Triggered internally at <file>:<line>.)" tail."""
    return re.sub(r"\s*\(Triggered internally at [^)]*\)", "", str(message)).strip()


def run_config(config: BenchConfig, *, cap_bytes: int | None = None, min_run_time: float = 0.2,
               min_samples: int = MIN_SAMPLES, deadline: float | None = None, peak_gflops: float | None = None,
               warm_up: bool = True) -> BenchResult:  # fmt: skip
    """Measure one configuration; never raises for a kernel that cannot run or runs out of memory.

    A configuration over ``cap_bytes`` (:meth:`.Impl.guard_bytes`) is skipped before any tensor is made. Then a
    warm-up call (``warm_up``, always on CUDA; the memory-measured call warms up too), the measured call and the
    timed calls. The checks against float64 (:mod:`.checks`) are the sweep's to add.
    """
    impl = get_impl(config.impl)
    dev = torch.device(config.device)
    predicted = int(impl.predicted_bytes(config))
    reason = impl.cannot_run(config)
    if reason:
        return _result(config, predicted, "n/a", reason)
    cap = default_cap_bytes(dev) if cap_bytes is None else check_int("cap_bytes", cap_bytes, low=1)
    reason = guard_reason(impl.guard_bytes(config), cap)
    if reason:
        return _result(config, predicted, "skipped", reason)

    inputs: Any = None
    step: Any = None
    failure: tuple[str, str] | None = None
    try:
        first_s = 0.0

        def timed_call() -> Any:  # the call alone, without the memory bookkeeping around it
            nonlocal first_s
            started = time.perf_counter()
            out = step()
            first_s = time.perf_counter() - started
            return out

        with warnings.catch_warnings(record=True, action="always") as caught:
            try:
                inputs, step = config_call(config)  # bwd: the forward runs here
                if warm_up or dev.type == "cuda":
                    step()  # warm-up: kernels chosen, caches filled, lazy initialisation done
                    if dev.type == "cuda":
                        torch.cuda.synchronize(dev)
                peak, source = measure_peak_extra(timed_call, dev)  # also a warm-up for this shape
            except RuntimeError as exc:
                if impl.forced and not is_oom(exc):  # e.g. "No available kernel": a limit of the kernel, no fault
                    told = " ".join(dict.fromkeys(_torch_says(w.message) for w in caught)) or _first_line(exc)
                    return _result(config, predicted, "n/a", f"{NOT_AVAILABLE}: {told}")
                raise
        backend = impl.backend(inputs, config.causal)
        timing = time_call(
            step, dev, min_run_time=min_run_time, min_samples=min_samples, deadline=deadline, expected_s=first_s
        )
    except (RuntimeError, MemoryError) as exc:
        failure = ("oom" if is_oom(exc) else "error", _first_line(exc))
    finally:
        inputs = step = None  # the closures see this too, so the tensors (and a kept graph) can go
    gc.collect()  # after the except block: the traceback's frames held the big tensors until now
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    if failure is not None:
        return _result(config, predicted, *failure)
    # An approximation skips most of exact attention's FLOPs: a rate counted on them would be fiction.
    gflops = config.flops() / timing.median / 1e9 if impl.exact else None
    return _result(config, predicted, "ok", median_ms=timing.median * 1e3, iqr_ms=timing.iqr * 1e3, peak_bytes=peak,
                   gflops=gflops, pct_of_peak=100.0 * gflops / peak_gflops if peak_gflops and gflops else None,
                   samples=len(timing.samples), backend=backend, memory_source=source)  # fmt: skip


# ---- output -------------------------------------------------------------------------------


def write_csv(rows: Sequence[BenchResult], out: IO[str]) -> None:
    """Write the rows to an open text file with a header line of :data:`CSV_COLUMNS`."""
    writer = csv.DictWriter(out, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: ("" if v is None else v) for k, v in asdict(r).items()} for r in rows)


def speedups(rows: Sequence[BenchResult], baseline: str = "textbook") -> list[dict[str, Any]]:
    """For every ok row that has an ok ``baseline`` row at the same n: baseline time / its time."""
    base = {r.n: r.median_ms for r in rows if r.impl == baseline and r.status == "ok" and r.median_ms}
    return [
        {"impl": r.impl, "n": r.n, "speedup": base[r.n] / r.median_ms}
        for r in rows
        if r.status == "ok" and r.median_ms and r.n in base and r.impl != baseline
    ]
