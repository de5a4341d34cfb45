"""The page's models and their cached readings: the shipped runs, the runs viewers train, and what each shows.

A run is named by a plain string: ``shipped:<variant>`` for a run of the shipped file, or an id made when a
viewer trains. Every cached reading takes that name (and plain values), so nothing hashes a tensor. A
viewer's runs live in a small server-wide store (the newest :data:`KEEP`), their ids in the session.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from typing import Any

import numpy as np
import streamlit as st
import torch

from attention_core.induction import eval_tokens, forward, half_losses, head_scores
from attention_core.induction.shipped import RUNS, Run, history_row, load_run
from attention_core.induction.training import Progress, phase_change_step

VARIANTS = {"induction": "Two layers", "one_layer": "One layer", "no_mask": "No causal mask"}
KEEP = 48  # viewers' runs the server keeps (about 0.2 MB each)
SESSION_RUNS = "in_runs"  # session state: {variant: run name} of the viewer's own runs


class RunStore:
    """The newest :data:`KEEP` runs trained on this server, by id; older ones fall back to the shipped run."""

    def __init__(self) -> None:
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, run: Run) -> str:
        name = f"run:{uuid.uuid4().hex[:12]}"
        with self._lock:
            self._runs[name] = run
            while len(self._runs) > KEEP:
                self._runs.popitem(last=False)
        return name

    def get(self, name: str) -> Run | None:
        with self._lock:
            return self._runs.get(name)


@st.cache_resource(show_spinner=False)
def store() -> RunStore:
    return RunStore()


@st.cache_resource(show_spinner=False)
def shipped(variant: str) -> Run:
    """A run of the shipped file, on the CPU (read once per server)."""
    return load_run(variant, device="cpu")


def current(variant: str) -> str:
    """The run the page shows for ``variant``: the viewer's latest, else the shipped one."""
    name = st.session_state.get(SESSION_RUNS, {}).get(variant)
    return name if name is not None and store().get(name) is not None else f"shipped:{variant}"


def session_runs() -> dict[str, str]:
    """The session's own runs, ``{variant: run name}``: a dict kept in the session, changed in place."""
    return st.session_state.setdefault(SESSION_RUNS, {})


def forget(variant: str) -> None:
    """Show the shipped run of ``variant`` again."""
    st.session_state.get(SESSION_RUNS, {}).pop(variant, None)


def run_of(name: str) -> Run:
    if name.startswith("shipped:"):
        return shipped(name.split(":", 1)[1])
    run = store().get(name)
    if run is None:
        raise ValueError("this trained run is no longer kept on the server; train again")
    return run


def history_arrays(history: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """A run's history as columns: ``step``, losses, ``previous_token (T, layers, H)`` etc."""
    out = {k: np.array([r[k] for r in history], dtype=float) for k in ("step", "seconds", "loss_first",
                                                                        "loss_repeat", "induction_score")}  # fmt: skip
    for k in ("previous_token", "prefix_matching", "copying"):
        out[k] = np.array([r[k] for r in history], dtype=float)  # (T, layers, H)
    return out


def patterns_on(run: Run, tokens: torch.Tensor, causal: bool, ablate: tuple = ()) -> dict[str, Any]:
    """Every head's pattern on one sequence ``tokens (1, L)``, the model's guesses and each prediction's loss."""
    with torch.no_grad():
        fw = forward(run.weights, tokens, causal=causal, ablate=ablate, keep=True)
        assert fw.patterns is not None
        probs = torch.softmax(fw.logits[0].float(), dim=-1)  # (L, V)
        nll = -torch.log(probs[:-1].gather(-1, tokens[0, 1:, None]).clamp_min(1e-30)).squeeze(-1)  # (L−1,)
        return {
            "patterns": torch.stack([p[0] for p in fw.patterns]).numpy(),  # (layers, H, L, L)
            "predicted": probs.argmax(-1).tolist(),
            "confidence": probs.max(-1).values.tolist(),
            "nll": nll.numpy(),
        }


def example_tokens(run: Run) -> torch.Tensor:
    """The one repeated sequence every figure of a run is drawn on: the held-out batch's first, ``(1, 2·half)``."""
    return eval_tokens(run.weights.config, run.settings["seed"], "cpu")[:1]


@st.cache_data(max_entries=64, show_spinner=False)
def view(name: str) -> dict[str, Any]:
    """What the Train tab shows of a run: its history, its heads on the example sequence, its final scores."""
    run = run_of(name)
    cfg, causal = run.weights.config, run.settings["causal"]
    tokens = example_tokens(run)
    h = history_arrays(run.history)
    return {
        "history": h,
        "tokens": tokens[0].tolist(),
        "example": patterns_on(run, tokens, causal),
        "scores": run.scores,
        "settings": run.settings,
        "vocab": cfg.vocab,
        "half": cfg.half,
        "layers": cfg.layers,
        "heads": cfg.n_heads,
        "phase": phase_change_step(h["step"], h["loss_repeat"], cfg.vocab),
    }


@st.cache_data(max_entries=128, show_spinner=False)
def ablation(name: str, cut: tuple[tuple[int, int], ...]) -> dict[str, Any]:
    """The run with the heads ``cut`` (``(layer, head)`` pairs) zeroed, on the held-out batch and the example."""
    run = run_of(name)
    cfg, causal = run.weights.config, run.settings["causal"]
    batch = eval_tokens(cfg, run.settings["seed"], "cpu")
    with torch.no_grad():
        s = head_scores(run.weights, batch, causal=causal, ablate=cut)
        fw = forward(run.weights, batch, causal=causal, ablate=cut)
        logp = torch.log_softmax(fw.logits[:, :-1].float(), dim=-1)  # (N, L−1, V)
        per_position = -logp.gather(-1, batch[:, 1:, None]).squeeze(-1).mean(0)  # (L−1,)
        first, repeat = half_losses(fw.logits, batch, cfg.half)
    return {
        "prefix_matching": s["prefix_matching"].numpy(), "previous_token": s["previous_token"].numpy(),
        "loss_first": float(first), "loss_repeat": float(repeat), "per_position": per_position.numpy(),
        "example": patterns_on(run, example_tokens(run), causal, cut),
    }  # fmt: skip


@st.cache_data(max_entries=128, show_spinner=False)
def read_sequence(name: str, tokens: tuple[int, ...], layer: int, head: int) -> dict[str, Any]:
    """The run reading ``tokens``, with head ``(layer, head)`` zeroed when ``layer ≥ 0``."""
    run = run_of(name)
    cut = () if layer < 0 else ((layer, head),)
    return patterns_on(run, torch.tensor([tokens], dtype=torch.long), run.settings["causal"], cut)


def run_from(records: list[Progress], settings: dict[str, Any]) -> Run:
    """A viewer's run from its records so far (the last holds the live weights, copied here)."""
    from attention_core.induction.shipped import scores_of, snapshot

    w = snapshot(records[-1].weights, "cpu")  # the page reads runs on the CPU, wherever they trained
    return Run(w, settings, [history_row(p) for p in records], scores_of(w, settings["causal"], settings["seed"]))


__all__ = ["RUNS", "VARIANTS"]
