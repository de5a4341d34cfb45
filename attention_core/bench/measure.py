"""How the benchmark measures: time, peak memory, FLOP rates, and the memory it may use.

Timing follows torch's advice: ``Timer.blocked_autorange`` on the CPU (thread count set), CUDA events on a GPU,
after a warm-up, reported as the median and inter-quartile range. Peak memory is the growth over the memory in use
before the call: the CUDA allocator's peak, or on Linux the peak resident set (``VmHWM``, reset through
``/proc/self/clear_refs``); elsewhere it is not measured.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.benchmark import Timer

from ..device import device_info, format_bytes, measuring_threads, resolve_device
from ..validation import check_choice, check_float, check_int, check_ints
from .config import DTYPES, MODES
from .memory_models import PEAK_SQUARES

CAP_ENV = "ATTENTION_BENCH_CAP_GB"


# ---- where we are -------------------------------------------------------------------------


def free_memory_bytes(device: str | torch.device | None = None) -> int | None:
    """Memory a new allocation can use now: free GPU memory, or available RAM within any cgroup limit."""
    dev = resolve_device(device)
    if dev.type == "cuda":
        return int(torch.cuda.mem_get_info(dev)[0])  # (free, total)
    available = _proc_kib("/proc/meminfo", "MemAvailable")
    known = [b for b in (None if available is None else available * 1024, _cgroup_headroom()) if b is not None]
    return min(known) if known else None


def _proc_kib(path: str, field: str) -> int | None:
    """A ``field: N kB`` line of a ``/proc`` file, in KiB (``None`` where there is none)."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _cgroup_headroom() -> int | None:
    """cgroup v2 ``memory.max − memory.current`` of this container, when it has a limit."""
    base = Path("/sys/fs/cgroup")
    try:
        limit = (base / "memory.max").read_text().strip()
        current = int((base / "memory.current").read_text().strip())
    except (OSError, ValueError):
        return None
    return max(int(limit) - current, 0) if limit.isdigit() else None  # "max": no limit


def default_cap_bytes(device: str | torch.device | None = None, *, ceiling: int | None = None) -> int:
    """How much memory one configuration may ask for: ``$ATTENTION_BENCH_CAP_GB`` when set, else half the free
    RAM or 80 % of a GPU's free memory, and no more than ``ceiling`` bytes (the app passes Community Cloud's)."""
    override = os.environ.get(CAP_ENV, "").strip()
    if override:
        try:
            gib = check_float(CAP_ENV, float(override), low=0.0, low_open=True)
        except ValueError:
            raise ValueError(f"${CAP_ENV} must be a positive number of GiB, got {override!r}") from None
        return int(gib * 2**30)
    dev = resolve_device(device)
    free = free_memory_bytes(dev)
    if free is None:
        free = 4 * 2**30  # nothing to go by: assume a small machine
    cap = int(free * (0.8 if dev.type == "cuda" else 0.5))  # half the RAM leaves room for the rest of the machine
    if ceiling is not None:
        cap = min(cap, check_int("ceiling", ceiling, low=1))
    return max(cap, 1)


def guard_reason(needed_bytes: int, cap_bytes: int) -> str | None:
    """``None`` if the configuration fits under the cap, else why it is skipped."""
    return f"needs {format_bytes(needed_bytes)} > cap {format_bytes(cap_bytes)}" if needed_bytes > cap_bytes else None


# ---- the n × n matrix and the FLOPs --------------------------------------------------------


def score_matrix_bytes(n: int, dtype: str | torch.dtype = "float32", batch: int = 1, heads: int = 1) -> int:
    """Bytes of one ``(batch, heads, n, n)`` score matrix: n²·itemsize·batch·heads."""
    n, batch, heads = check_ints(n=n, batch=batch, heads=heads, low=1)
    return n * n * _dtype(dtype).itemsize * batch * heads


def _dtype(dtype: str | torch.dtype) -> torch.dtype:
    return dtype if isinstance(dtype, torch.dtype) else DTYPES[check_choice("dtype", dtype, DTYPES)]


def memory_table(dtype: str | torch.dtype = "float32", batch: int = 1, heads: int = 1, *, free_bytes: int | None = None,
                 cap_bytes: int | None = None, mode: str = "fwd") -> list[dict[str, Any]]:  # fmt: skip
    """One row per n: one score matrix's size, whether it fits in ``free_bytes``, and whether the textbook code's
    and the traced path's peaks (:data:`PEAK_SQUARES` score matrices) fit under ``cap_bytes``."""
    textbook, trace = PEAK_SQUARES[check_choice("mode", mode, MODES)]
    sizes = {n: score_matrix_bytes(n, dtype, batch, heads) for n in (2**p for p in range(9, 18))}  # 512 … 131072
    return [
        {
            "n": n,
            "score matrix": format_bytes(size),
            "fits here": None if free_bytes is None else size <= free_bytes,
            "textbook ≤ cap": None if cap_bytes is None else textbook * size <= cap_bytes,
            "trace ≤ cap": None if cap_bytes is None else trace * size <= cap_bytes,
        }
        for n, size in sizes.items()
    ]


def largest_fitting_n(limit_bytes: int, dtype: str | torch.dtype = "float32", batch: int = 1, heads: int = 1,
                      copies: int = 1) -> int:  # fmt: skip
    """The largest power-of-two n (up to 2²²) whose ``copies`` score matrices fit in ``limit_bytes`` (0 if none)."""
    per = check_int("copies", copies, low=1) * score_matrix_bytes(1, dtype, batch, heads)
    side = min(math.isqrt(max(limit_bytes, 0) // per), 1 << 22)
    return 1 << (side.bit_length() - 1) if side else 0


def flop_table(n: int, d: int, batch: int = 1, heads: int = 1, causal: bool = False,
               mode: str = "fwd") -> list[dict[str, Any]]:  # fmt: skip
    """FLOPs of each step of ``mode``'s passes (a multiply-add is 2 FLOPs), halved under the causal mask.

    Softmax counts 5 per score (max, subtract, exp, sum, divide). The backward is FlashAttention-2's: QKᵀ
    recomputed, P rebuilt from each row's log-sum-exp, four matmuls and softmax's backward.
    """
    n, d, batch, heads = check_ints(n=n, d=d, batch=batch, heads=heads, low=1)
    mode = check_choice("mode", mode, MODES)
    half = 0.5 if causal else 1.0
    matmul, square = 2 * batch * heads * n * n * d, batch * heads * n * n
    forward = [
        ("QKᵀ", "2·B·H·n²·d", matmul),
        ("scale ÷√d", "B·H·n²", square),
        ("softmax", "≈ 5·B·H·n²", 5 * square),
        ("weights·V", "2·B·H·n²·d", matmul),
    ]
    backward = [
        ("QKᵀ, recomputed", "2·B·H·n²·d", matmul),
        ("P = exp(S − lse)", "≈ 3·B·H·n²", 3 * square),  # scale, subtract, exp
        ("dV = Pᵀ·dO", "2·B·H·n²·d", matmul),
        ("dP = dO·Vᵀ", "2·B·H·n²·d", matmul),
        ("dS = P∘(dP − D)", "≈ 2·B·H·n²", 2 * square),
        ("dQ = dS·K", "2·B·H·n²·d", matmul),
        ("dK = dSᵀ·Q", "2·B·H·n²·d", matmul),
    ]
    steps = [("forward", *s) for s in forward if mode != "bwd"] + [("backward", *s) for s in backward if mode != "fwd"]
    total = sum(f for *_, f in steps)
    return [
        {"pass": which, "operation": op, "formula": formula, "flops": int(f * half), "share": f / total}
        for which, op, formula, f in steps
    ]


# ---- timing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Seconds per call: every sample, their median and inter-quartile range."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return float(np.median(self.samples))

    @property
    def iqr(self) -> float:
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float(q3 - q1)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn: Callable[[], Any], device: str | torch.device = "cpu", *, min_run_time: float = 0.2,
              min_samples: int = 3, deadline: float | None = None,
              expected_s: float | None = None) -> Timing:  # fmt: skip
    """Per-call seconds of ``fn()`` (already warmed up): at least ``min_samples`` calls and ``min_run_time``
    seconds unless ``deadline`` (``time.perf_counter()``) passes. On the CPU a call known (``expected_s``) to fill
    ``min_run_time`` is timed alone, sparing ``blocked_autorange``'s trial call."""
    dev = resolve_device(device)
    min_run_time = check_float("min_run_time", min_run_time, low=0.0)
    min_samples = check_int("min_samples", min_samples, low=1)
    samples: list[float] = []
    if dev.type == "cuda":
        with torch.cuda.device(dev):
            while len(samples) < min_samples or sum(samples) < min_run_time:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) / 1000.0)
                if len(samples) >= 1000 or (deadline is not None and time.perf_counter() > deadline):
                    break
        return Timing(tuple(samples))
    with measuring_threads() as threads:  # the configured thread count, whatever else the process runs
        if expected_s is not None and expected_s >= max(min_run_time, 1e-3):
            samples = [_one_call(fn)]
        else:
            timer = Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads, label="attention")
            samples = list(timer.blocked_autorange(min_run_time=min_run_time).times)
        while len(samples) < min_samples:
            if deadline is not None and time.perf_counter() + samples[-1] > deadline:
                break
            samples.append(_one_call(fn))
    return Timing(tuple(samples))


def _one_call(fn: Callable[[], Any]) -> float:
    """One call, timed alone (``Timer.timeit`` would add two warm-up calls of its own)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# ---- memory -------------------------------------------------------------------------------

_CLEAR_REFS = Path("/proc/self/clear_refs")
_STATUS = "/proc/self/status"


_LIBC = ctypes.CDLL(None) if os.name == "posix" else None  # the process's own symbols, the C library's among them
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
MMAP_THRESHOLD_BYTES = 4 * 2**20


def _release_free_heap() -> None:
    """Hand freed heap pages back to the OS, so reusing them shows up as growth again, and serve every block of
    ``MMAP_THRESHOLD_BYTES`` or more with its own mmap: glibc raises its threshold each time a large block is
    freed, so blocks of a few MiB would come from the heap, where freed space lingers and a later peak RSS reads
    megabytes too high."""
    gc.collect()
    if hasattr(_LIBC, "mallopt"):  # glibc
        _LIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        _LIBC.malloc_trim(0)


def cpu_peak_supported() -> bool:
    """Whether this process can reset and read its peak resident set (Linux ``/proc``)."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _proc_kib(_STATUS, "VmHWM") is not None


def measure_peak_extra(fn: Callable[[], Any], device: str | torch.device = "cpu") -> tuple[int | None, str]:
    """Call ``fn()`` once: (bytes its peak added to the memory in use before, output included; how measured),
    or ``(None, "not measured")`` where the platform cannot measure."""
    dev = resolve_device(device)
    if dev.type == "cuda":
        _sync(dev)
        before = torch.cuda.memory_allocated(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        out = fn()
        _sync(dev)
        peak = torch.cuda.max_memory_allocated(dev) - before
        del out
        return max(int(peak), 0), "CUDA allocator peak"
    if not cpu_peak_supported():
        return None, "not measured"
    _release_free_heap()
    before = _proc_kib(_STATUS, "VmRSS")
    _CLEAR_REFS.write_text("5")  # resets VmHWM to the current RSS
    out = fn()
    peak = _proc_kib(_STATUS, "VmHWM")
    del out
    if before is None or peak is None:
        return None, "not measured"
    return max(peak - before, 0) * 1024, "peak RSS (VmHWM)"


# ---- the device's matmul rate ---------------------------------------------------------------


@functools.cache
def matmul_peak_gflops(device: str = "cpu", dtype: str = "float32") -> float:
    """GFLOP/s of one large square matmul on this device and dtype, measured once per process."""
    dev = resolve_device(device)
    dt = _dtype(dtype)
    side = 4096 if dev.type == "cuda" else 1024
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(2, side, side, generator=gen).to(device=dev, dtype=dt)  # (side, side) each
    fn = lambda: a @ b  # noqa: E731
    fn()
    _sync(dev)
    return 2 * side**3 / time_call(fn, dev).median / 1e9


def cpu_load_per_core() -> float | None:
    """The 1-minute load average divided by the number of cores, or ``None`` where unknown. Above about 1.5
    a kernel of many small steps waits at every thread barrier: its timings are the neighbours'."""
    try:
        return os.getloadavg()[0] / max(os.cpu_count() or 1, 1)
    except (OSError, AttributeError):
        return None


# ---- the environment card ------------------------------------------------------------------


def environment(device: str | torch.device | None = None, *, cap_bytes: int | None = None) -> dict[str, str]:
    """What a reader needs to compare numbers across machines, as plain strings (``cap_bytes``: the
    memory cap the run used, default :func:`default_cap_bytes`)."""
    info = device_info(device)
    env = {
        "torch": info.torch_version,
        "device": info.device,
        "device name": info.name,
        "threads": str(info.threads),
        "CUDA": info.cuda_version or "–",
        "cuDNN": info.cudnn_version or "–",
        "TF32 matmul": "–" if info.tf32_matmul is None else ("on" if info.tf32_matmul else "off"),
        "memory": format_bytes(info.total_memory_bytes),
    }
    with contextlib.suppress(ValueError):
        env["benchmark memory cap"] = format_bytes(cap_bytes or default_cap_bytes(info.device))
    with contextlib.suppress(OSError, AttributeError):  # other processes on the cores make timings noisy
        env["load average (1 min)"] = f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    return env
