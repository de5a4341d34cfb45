"""Device selection: the one place that decides where tensors live.

Torch's convention: a function that takes tensors computes on their device; one that makes tensors takes
``device=``, else uses torch's default device as ``torch.ones`` does (:func:`new_tensor_device`). The app
picks :func:`default_device` (CUDA when available, else the CPU; ``$ATTENTION_DEVICE`` overrides) and passes it.
"""

from __future__ import annotations

import contextlib
import os
import platform  # already loaded by torch
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import torch

ENV_VAR = "ATTENTION_DEVICE"


def available_devices() -> list[str]:
    """Names of the devices this process can compute on, CPU first."""
    names = ["cpu"]
    if torch.cuda.is_available():
        names += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return names


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` (``None`` or "auto": :func:`default_device`) as a usable ``torch.device``; ``ValueError`` for a
    malformed name or a device that is not present, so a typo never turns into a silent fallback."""
    if device is None or (isinstance(device, str) and device.strip().lower() in ("", "auto")):
        return default_device()
    try:
        dev = torch.device(device.strip().lower() if isinstance(device, str) else device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:index]', got {device!r}") from exc
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {str(dev)!r} was asked for, but CUDA is not available here")
        index = 0 if dev.index is None else dev.index
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"device {str(dev)!r} was asked for, but only {torch.cuda.device_count()} "
                "CUDA device(s) are present"
            )
        return torch.device(dev.type, index)
    raise ValueError(f"device must be 'cpu' or 'cuda[:index]', got {str(dev)!r}")


def new_tensor_device(device: str | torch.device | None = None) -> torch.device:
    """Where a function that makes tensors puts them: ``device`` when given (``"auto"``: :func:`default_device`),
    else ``torch.get_default_device()``, exactly where ``torch.ones(3)`` would go. ``"meta"`` (tensors with a
    shape and no data, which the device tests run on) is taken as it is; other names as :func:`resolve_device`."""
    if device is None:
        return torch.get_default_device()
    if device == "meta" or (isinstance(device, torch.device) and device.type == "meta"):
        return torch.device("meta")
    return resolve_device(device)


def default_device() -> torch.device:
    """CUDA when available, else the CPU; ``$ATTENTION_DEVICE`` overrides."""
    override = os.environ.get(ENV_VAR, "").strip()
    if override and override.lower() != "auto":
        return resolve_device(override)
    if torch.cuda.is_available():
        return torch.device(torch.cuda.current_device())  # an index alone names a CUDA device
    return torch.device("cpu")


@dataclass(frozen=True)
class DeviceInfo:
    """What the sidebar and the benchmark's environment card show."""

    device: str
    name: str
    torch_version: str
    threads: int
    total_memory_bytes: int | None
    cuda_version: str | None = None  # these three on CUDA only
    cudnn_version: str | None = None
    tf32_matmul: bool | None = None


def device_info(device: str | torch.device | None = None) -> DeviceInfo:
    """Describe ``device`` (default: :func:`default_device`) in plain values."""
    dev = resolve_device(device)
    common = {"torch_version": torch.__version__, "threads": torch.get_num_threads()}
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        cudnn = str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else None
        return DeviceInfo(str(dev), props.name, total_memory_bytes=int(props.total_memory), **common,
                          cuda_version=torch.version.cuda, cudnn_version=cudnn,
                          tf32_matmul=bool(torch.backends.cuda.matmul.allow_tf32))  # fmt: skip
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not every OS names these
        ram = None
    return DeviceInfo("cpu", _cpu_name(), total_memory_bytes=ram, **common)


def _cpu_name() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "CPU"


def format_bytes(n: float | None) -> str:
    """``8589934592`` → ``"8.0 GiB"``; binary units, one decimal."""
    if n is None:
        return "–"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


# ---------------------------------------------------------------------------------------------
# Intra-op threads, one process-wide setting: tiny tensors run fastest on one thread, a benchmark must time
# with the configured count. A measurement wins: while one runs nothing drops the count, and one that starts
# during a one-thread section restores it.

_THREADS_LOCK = threading.Lock()
_open = {"one": 0, "measure": 0}  # the sections of each kind running now
_configured = torch.get_num_threads()


def busy_cpu() -> bool:
    """Whether the 1-minute load average leaves less than one core free (False where the OS does not say): there
    intra-op threads wait on one another (a busy 2-core machine: a decoder token 259 ms on two threads, 83 on one)."""
    try:
        return os.getloadavg()[0] > (os.cpu_count() or 1) - 1
    except (AttributeError, OSError):
        return False


@contextlib.contextmanager
def _threads(kind: str) -> Iterator[int]:
    """A section of ``kind`` ("one" or "measure"), the count set as the note above says; yields the configured count."""
    global _configured
    with _THREADS_LOCK:
        if not any(_open.values()):
            _configured = torch.get_num_threads()
        _open[kind] += 1
        torch.set_num_threads(_configured if _open["measure"] else 1)
        count = _configured
    try:
        yield count
    finally:
        with _THREADS_LOCK:
            _open[kind] -= 1
            torch.set_num_threads(1 if _open["one"] and not _open["measure"] else _configured)


def one_thread(device: torch.device) -> contextlib.AbstractContextManager[int | None]:
    """Run many tiny CPU ops on one intra-op thread (no-op on CUDA or during a measurement)."""
    return _threads("one") if device.type == "cpu" else contextlib.nullcontext()


def measuring_threads() -> contextlib.AbstractContextManager[int]:
    """Hold the configured thread count for a timing; yields that count."""
    return _threads("measure")
