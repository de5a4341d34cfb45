"""The server-wide state of the benchmark page: one run at a time, the rows kept, and Cloud detection."""

from __future__ import annotations

import threading

from attention_core.bench import BenchConfig
from attention_core.bench import run as run_mod
from ui.benchmark import params
from ui.benchmark.running import ResultStore
from ui.runlock import RunLock

# ---- one run at a time per server ---------------------------------------------------------


def test_the_run_lock_lets_one_run_at_a_time():
    lock = RunLock()
    assert lock.try_acquire() and lock.busy
    lock.running = "8 configurations on cpu"
    seen = []
    other = threading.Thread(target=lambda: seen.append((lock.try_acquire(timeout=0.05), lock.release())))
    other.start()
    other.join()
    assert seen == [(False, None)] and lock.running == "8 configurations on cpu"  # a second viewer waits in line
    assert lock.busy  # and its release (in a ``finally``, whether or not it got a turn) leaves our lock alone
    lock.release()
    assert not lock.busy and lock.running == "" and lock.busy_for() == 0.0
    assert lock.try_acquire()
    lock.release()


def test_a_lock_left_by_a_finished_thread_is_freed():
    lock = RunLock()
    gone = threading.Thread(target=lock.try_acquire)  # takes the lock and ends without releasing
    gone.start()
    gone.join()
    assert lock.busy
    assert lock.try_acquire()
    lock.release()


# ---- the rows measured so far ---------------------------------------------------------------


def test_the_store_keeps_finished_rows_but_not_skips_or_cancels():
    store = ResultStore()
    config = BenchConfig("tiled", 16, d=4, heads=1)
    for status, kept in (("skipped", False), ("cancelled", False), ("oom", True), ("ok", True)):
        row = run_mod._result(config, 1, status)
        store.remember(row)
        assert (store.rows.get(config) is row) == kept, status
    store.rows.clear()
    assert store.rows.get(config) is None


def test_a_grouped_query_row_is_kept_under_its_own_configuration():
    store = ResultStore()
    gqa, mha = BenchConfig("tiled", 16, d=4, heads=4, kv_heads=2), BenchConfig("tiled", 16, d=4, heads=4)
    row = run_mod._result(gqa, 1, "ok")
    store.remember(row)
    assert store.rows.get(gqa) is row and store.rows.get(mha) is None


# ---- Streamlit Community Cloud --------------------------------------------------------------


def test_cloud_detection(monkeypatch, tmp_path):
    monkeypatch.setattr(params, "Path", lambda p: tmp_path / "absent" if p == "/mount/src" else p)
    monkeypatch.delenv("ATTENTION_CLOUD", raising=False)
    monkeypatch.setenv("HOSTNAME", "laptop")
    assert not params.running_on_streamlit_cloud() and params.cap_ceiling("cpu") is None
    monkeypatch.setenv("HOSTNAME", "streamlit")
    assert params.running_on_streamlit_cloud()
    monkeypatch.setenv("ATTENTION_CLOUD", "0")
    assert not params.running_on_streamlit_cloud()
    monkeypatch.setenv("HOSTNAME", "laptop")
    monkeypatch.setenv("ATTENTION_CLOUD", "1")
    assert params.running_on_streamlit_cloud()
    assert params.cap_ceiling("cpu") == params.CLOUD_CAP_BYTES and params.cap_ceiling("cuda:0") is None
