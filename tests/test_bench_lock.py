"""One benchmark run at a time per server: the run lock and the finished rows it keeps."""

from __future__ import annotations

from attention_core import bench
from attention_core.bench import BenchConfig
from attention_core.bench import run as run_mod

# ---- one run at a time per server ---------------------------------------------------------


def test_the_run_lock_lets_one_run_at_a_time():
    import threading

    lock = bench.BenchLock()
    assert lock.try_acquire() and lock.busy
    seen = []
    other = threading.Thread(target=lambda: seen.append(lock.try_acquire(timeout=0.05)))
    other.start()
    other.join()
    assert seen == [False]  # a second viewer waits in line
    lock.release()
    assert not lock.busy and lock.try_acquire()
    lock.release()


def test_a_lock_left_by_a_finished_thread_is_freed():
    import threading

    lock = bench.BenchLock()
    gone = threading.Thread(target=lock.try_acquire)  # takes the lock and ends without releasing
    gone.start()
    gone.join()
    assert lock.busy
    assert lock.try_acquire()
    lock.release()


def test_the_lock_keeps_finished_rows_but_not_skips_or_cancels():
    lock = bench.BenchLock()
    config = BenchConfig("tiled", 16, d=4, heads=1)
    for status, kept in (("skipped", False), ("cancelled", False), ("oom", True), ("ok", True)):
        row = run_mod._result(config, 1, status)
        lock.remember(row)
        assert (lock.lookup(config) is row) == kept, status
    lock.forget()
    assert lock.lookup(config) is None
