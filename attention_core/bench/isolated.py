"""Peak memory of one configuration, measured in a fresh worker process.

In a long-lived process glibc may serve an n×n block from memory freed earlier, or keep freed
memory resident, so the same call's peak resident set can differ by a whole n×n matrix from run
to run. A fresh process with ``MALLOC_MMAP_THRESHOLD_`` set gives every block of 64 KiB or more
pages of its own, so its peak follows the live tensors. It costs a Python and torch start-up, so
the page measures in its own process; the tests and ``benchmarks/report.py`` check the memory
models with this.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from .config import BenchConfig

FRESH_PAGES = 64 * 2**10
FRESH_PAGES_ENV = {"MALLOC_MMAP_THRESHOLD_": str(FRESH_PAGES), "MALLOC_TRIM_THRESHOLD_": "0"}
_ROOT = Path(__file__).resolve().parents[2]  # the directory that holds attention_core/
_WORKER = "from attention_core.bench.isolated import _worker; _worker()"


def fresh_process_peak(config: BenchConfig, *, timeout_s: float = 300.0) -> int | None:
    """Bytes the config's call adds at its peak (output included), measured in a fresh process.

    The call is the config's mode's (:func:`.passes.timed_pass`): in ``bwd`` mode the forward's
    graph is already held, so the peak is what the backward adds to it.

    ``None`` where the platform cannot measure a CPU peak. Raises ``RuntimeError`` with the
    worker's last line when the worker fails.
    """
    env = {**os.environ, **FRESH_PAGES_ENV, "ATTENTION_DEVICE": config.device}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(asdict(config))], capture_output=True, text=True,
                          timeout=timeout_s, check=False, cwd=_ROOT, env=env)  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the memory worker failed: {last}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer["peak_bytes"]


def _worker() -> None:
    """In the fresh process: make the inputs, warm up once, measure one call, print JSON."""
    from . import measure
    from .passes import config_call

    # measure_peak_extra sets the mmap threshold at 4 MiB (a compromise for the long-lived server); here every
    # block of 64 KiB or more keeps pages of its own.
    measure.MMAP_THRESHOLD_BYTES = FRESH_PAGES

    config = BenchConfig(**json.loads(sys.argv[1]))
    _inputs, step = config_call(config)  # bwd: the forward runs here
    step()  # warm-up: lazy initialisation is not the call's memory
    peak, source = measure.measure_peak_extra(step, config.device)
    print(json.dumps({"peak_bytes": peak, "source": source}))
