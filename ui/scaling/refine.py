"""The variance tab's full-size samples, computed off the script thread while the page shows an estimate."""

from __future__ import annotations

import threading

import streamlit as st

from ui.scaling.cached import histogram_data, variance_data
from ui.scaling.settings import QUICK_SAMPLES


class _Refiner:
    """Full-size variance samples, computed off the script thread; one job per settings at a time.

    The job calls the same cached functions the page calls, so when it is done the page's own
    call is a cache hit. Shared by every session of the server.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: set[tuple[int, int, int]] = set()
        self._failed: dict[tuple[int, int, int], str] = {}
        self._running: set[tuple[int, int, int]] = set()

    def ready(self, key: tuple[int, int, int]) -> bool:
        with self._lock:
            return key in self._done or key in self._failed

    def start(self, key: tuple[int, int, int]) -> None:
        with self._lock:
            if key in self._running or key in self._done:
                return
            self._running.add(key)
        # Not a daemon: a daemon thread still inside a torch op when the interpreter exits makes the
        # process abort ("terminate called without an active exception", exit code 134). The job
        # takes a few seconds at most, so exiting waits for it instead. Said explicitly: a new thread
        # would inherit "daemon" from the script thread that starts it, which is one.
        threading.Thread(target=self._run, args=(key,), name=f"refine-variance-{key}", daemon=False).start()

    def _run(self, key: tuple[int, int, int]) -> None:
        n, seed, d_k = key
        try:
            variance_data(n, seed)
            histogram_data(d_k, n, seed)
        except Exception as exc:  # shown by the page's own call, which raises it again
            with self._lock:
                self._failed[key] = str(exc)
        else:
            with self._lock:
                self._done.add(key)
        finally:
            with self._lock:
                self._running.discard(key)


@st.cache_resource(show_spinner=False)
def refiner() -> _Refiner:
    return _Refiner()


@st.fragment(run_every=0.5)
def await_refinement(key: tuple[int, int, int]) -> None:
    """Say the numbers are an estimate; rerun the page once the full sample is in."""
    if refiner().ready(key):
        st.rerun()
    st.caption(f":material/hourglass_top: Estimate from {QUICK_SAMPLES:,} samples, refining to {key[0]:,}…")
