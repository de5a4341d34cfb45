"""One benchmark at a time per process, and the rows measured so far.

Two timed runs at once would each slow the other down and both report nonsense, so
every run holds :class:`BenchLock` while it measures. The dashboard keeps one instance
for the whole server (in ``st.cache_resource``); a second viewer waits in line for it.
Finished rows are kept per configuration, so asking again for a sweep that was
already measured on this server returns at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import ClassVar

from .impls import BenchConfig
from .run import BenchResult

KEPT_STATUSES = ("ok", "n/a", "oom")  # a skip depends on the cap and the budget, a cancel on the viewer


@dataclass
class BenchLock:
    """The server's run lock, what holds it, and the rows measured so far."""

    wait_s: ClassVar[float] = 600.0  # how long a queued viewer waits before giving up
    results: dict[BenchConfig, BenchResult] = field(default_factory=dict)
    peaks: dict[tuple[str, str], float] = field(default_factory=dict)  # (device, dtype) -> matmul GFLOP/s
    running: str = ""
    since: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _owner: threading.Thread | None = field(default=None, repr=False)

    def try_acquire(self, timeout: float = 0.0) -> bool:
        """Take the lock, waiting up to ``timeout`` seconds; False if another run still holds it.

        A lock whose owning thread has ended without releasing it (it cannot happen through
        :meth:`release` in a ``finally``, but a server must not stay blocked if it does) is freed.
        """
        owner = self._owner
        if self._lock.locked() and owner is not None and not owner.is_alive():
            self.release()
        got = self._lock.acquire(timeout=timeout) if timeout > 0 else self._lock.acquire(blocking=False)
        if got:
            self._owner = threading.current_thread()
            self.running, self.since = "a benchmark", time.perf_counter()
        return got

    def describe(self, what: str) -> None:
        """Say what the current run measures, for the viewers in line."""
        self.running = what

    def release(self) -> None:
        self.running = ""
        self._owner = None
        self._lock.release()

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def busy_for(self) -> float:
        return time.perf_counter() - self.since if self.busy else 0.0

    def remember(self, row: BenchResult) -> None:
        """Keep a finished row for reuse, unless it only says the run was cut short."""
        if row.status in KEPT_STATUSES:
            self.results[_config_of(row)] = row

    def lookup(self, config: BenchConfig) -> BenchResult | None:
        return self.results.get(config)

    def forget(self) -> None:
        self.results.clear()


def _config_of(row: BenchResult) -> BenchConfig:
    return BenchConfig(row.impl, row.n, row.d, row.heads, row.batch, row.dtype, row.causal, row.device)
