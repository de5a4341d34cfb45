"""The training tab's toy runs: trained behind a progress bar, kept by their settings for every session."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import pandas as pd
import streamlit as st

from attention_core.scaling import named_init_stds, train_toy
from ui.scaling.settings import DEVICE, STEP_BUDGET, STEP_CHOICES, TOKENS_PER_STEP, TOY_D_MODEL, TRAIN_INITS


class _RunStore:
    """Finished training runs by their settings, shared by every session (the oldest go first).

    Not ``st.cache_data``: a cached function cannot drive a progress bar made outside it.
    """

    def __init__(self, size: int = 48) -> None:
        self._runs: OrderedDict[tuple[Any, ...], dict[str, pd.DataFrame]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size

    def get(self, key: tuple[Any, ...]) -> dict[str, pd.DataFrame] | None:
        with self._lock:
            if key in self._runs:
                self._runs.move_to_end(key)
                return self._runs[key]
        return None

    def put(self, key: tuple[Any, ...], runs: dict[str, pd.DataFrame]) -> None:
        with self._lock:
            self._runs[key] = runs
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)


@st.cache_resource(show_spinner=False)
def _run_store() -> _RunStore:
    return _RunStore()


def toy_batch(n_keys: int) -> int:
    return max(4, TOKENS_PER_STEP // n_keys)


def step_choices(d_k: int) -> tuple[int, ...]:
    return tuple(s for s in STEP_CHOICES if s * d_k <= STEP_BUDGET)


def training_runs(
    d_k: int, n_keys: int, optimizer: str, lr: float, init: str, steps: int, seed: int
) -> dict[str, pd.DataFrame]:
    """Both toy runs for these settings: from the store, or trained now behind a progress bar."""
    key = (d_k, n_keys, optimizer, lr, init, steps, seed)
    store = _run_store()
    runs = store.get(key)
    if runs is not None:
        return runs
    std = named_init_stds(TOY_D_MODEL, d_k)[TRAIN_INITS[init]]
    bar = st.progress(0.0, text="Training…")
    every = max(1, steps // 40)
    runs = {}
    for i, name in enumerate(("scaled", "unscaled")):

        def tick(step: int, total: int, i: int = i, name: str = name) -> None:
            if step % every == 0 or step == total:
                bar.progress((i * total + step) / (2 * total), text=f"Training the {name} model: step {step}/{total}")

        runs[name] = train_toy(name == "scaled", d_k, d_model=TOY_D_MODEL, n_keys=n_keys, batch=toy_batch(n_keys),
                               steps=steps, optimizer=optimizer, lr=lr, init_std=std, seed=seed,
                               progress=tick, device=DEVICE)  # fmt: skip
    bar.empty()
    store.put(key, runs)
    return runs
