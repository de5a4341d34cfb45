"""Peak memory of one configuration, measured in a fresh worker process.

In a long-lived process glibc may reuse or keep freed memory, so one call's peak resident set can differ by an n×n
matrix from run to run. A fresh process whose blocks of 64 KiB or more get pages of their own has a peak that
follows the live tensors; the tests and ``benchmarks/report.py`` check the memory models with it.
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
    """Bytes the config's call (:func:`.passes.timed_pass`; in ``bwd`` mode beyond the forward's kept graph) adds
    at its peak, output included, measured in a fresh process; ``None`` where no CPU peak can be measured.
    Raises ``RuntimeError`` with the worker's last line when the worker fails."""
    env = {**os.environ, **FRESH_PAGES_ENV, "ATTENTION_DEVICE": config.device}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(asdict(config))], capture_output=True, text=True,
                          timeout=timeout_s, check=False, cwd=_ROOT, env=env)  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the memory worker failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])["peak_bytes"]


def _worker() -> None:
    from . import measure
    from .passes import config_call

    measure.MMAP_THRESHOLD_BYTES = FRESH_PAGES  # the server's 4 MiB is a compromise for a long-lived process

    config = BenchConfig(**json.loads(sys.argv[1]))
    _inputs, step = config_call(config)  # bwd: the forward runs here
    step()  # warm-up: lazy initialisation is not the call's memory
    peak, source = measure.measure_peak_extra(step, config.device)
    print(json.dumps({"peak_bytes": peak, "source": source}))
