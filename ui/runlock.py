"""One heavy run at a time per server (two timed runs at once would both report nonsense): every page that
measures holds the server's :class:`RunLock` while it runs (:func:`turn`); a second viewer waits in line."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import streamlit as st
from streamlit.delta_generator import DeltaGenerator


@dataclass
class RunLock:
    """A lock with a description of the run that holds it, for the viewers in line."""

    wait_s: ClassVar[float] = 600.0  # how long a queued viewer waits before giving up
    running: str = ""
    since: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _owner: threading.Thread | None = field(default=None, repr=False)

    def try_acquire(self, timeout: float = 0.0, what: str = "a run") -> bool:
        """Take the lock for a run described as ``what``, waiting up to ``timeout`` seconds; False if another run
        holds it. A lock whose owner thread ended without releasing it is freed, so a server never stays blocked."""
        owner = self._owner
        if self._lock.locked() and owner is not None and not owner.is_alive():
            self._owner = None
            self._lock.release()
        got = self._lock.acquire(timeout=timeout)  # 0: do not wait
        if got:  # set before any Streamlit call a rerun could interrupt, so a ``finally`` knows the lock is ours
            self._owner = threading.current_thread()
            self.running, self.since = what, time.perf_counter()
        return got

    def release(self) -> None:
        """Free the lock if this thread holds it; a no-op otherwise, so a ``finally`` may call it either way."""
        if self._owner is threading.current_thread():
            self.running, self._owner = "", None
            self._lock.release()

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def busy_for(self) -> float:
        return time.perf_counter() - self.since if self.busy else 0.0


@st.cache_resource(show_spinner=False)
def server_lock() -> RunLock:
    """The one lock of this server, shared by every session and every page that measures."""
    return RunLock()


@contextlib.contextmanager
def turn(what: str) -> Iterator[bool]:
    """Hold the server's lock for a run described as ``what``, queued behind another session's run; yields False
    when the wait ran out. The lock is released however the block ends, Cancel (a rerun) included."""
    server = server_lock()
    try:
        yield _wait(server, what)
    finally:
        server.release()


def flag_button(where: DeltaGenerator, label: str, key: str, **button: Any) -> bool:
    """``where.button(label, key=key, **button)``; whether it was pressed. The press is a session flag its click
    callback sets: it survives a rerun that interrupts a run (Stop, a second click), where a return value would not."""
    where.button(label, key=key, on_click=_raise_flag, args=(key,), **button)
    return st.session_state.pop(f"{key}_asked", False)


def _raise_flag(key: str) -> None:
    st.session_state[f"{key}_asked"] = True


def _wait(server: RunLock, what: str) -> bool:
    if server.try_acquire(what=what):
        return True
    start = time.perf_counter()
    with st.status("Busy, queued: another viewer's measurement is running…", state="running") as status:
        while time.perf_counter() - start < server.wait_s:
            if server.try_acquire(timeout=0.5, what=what):
                status.update(label="Our turn: starting.", state="complete", expanded=False)
                return True
            status.update(label=f"Busy, queued behind {server.running} (running for {server.busy_for():.0f} s)…")
        status.update(label=f"Still busy after {server.wait_s:.0f} s; try again later.", state="error")
    return False
