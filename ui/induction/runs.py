"""The page's models and their cached readings: the shipped runs, the runs viewers train, and what each shows.

A run is named by a plain string: ``shipped:<variant>`` for a run of the shipped file, or an id made when a
viewer trains. Every cached reading takes that name (and plain values), so nothing hashes a tensor. A
viewer's runs live in a small server-wide store (the newest :data:`KEEP`), their ids in the session.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import streamlit as st
import torch

from attention_core.induction import InductionWeights, eval_tokens, forward, head_scores
from attention_core.induction.shipped import Run, history_row, load_run, scores_of, snapshot
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


@dataclass(frozen=True)
class History:
    """A run's records as columns, one entry per record."""

    step: np.ndarray  # (T,)
    seconds: np.ndarray  # (T,)
    loss_first: np.ndarray  # (T,)
    loss_repeat: np.ndarray  # (T,)
    previous_token: np.ndarray  # (T, layers, H)
    prefix_matching: np.ndarray  # (T, layers, H)

    @classmethod
    def of(cls, rows: list[dict[str, Any]]) -> History:
        return cls(*(np.array([r[f.name] for r in rows], dtype=float) for f in fields(cls)))


@dataclass(frozen=True)
class Scores:
    """Every head's scores ``(layers, H)`` and the two halves' losses (nats), on the held-out batch."""

    previous_token: np.ndarray
    prefix_matching: np.ndarray
    copying: np.ndarray
    loss_first: float
    loss_repeat: float

    @classmethod
    def of(cls, s: dict[str, Any]) -> Scores:
        """From :func:`head_scores`' tensors or a run's recorded lists."""
        heads = (np.asarray(s[k], dtype=np.float64) for k in ("previous_token", "prefix_matching", "copying"))
        return cls(*heads, float(s["loss_first"]), float(s["loss_repeat"]))


@dataclass(frozen=True)
class Reading:
    """A run reading one sequence ``(L,)``: every head's pattern, its guesses and each prediction's loss."""

    patterns: np.ndarray  # (layers, H, L, L)
    predicted: list[int]  # (L,): the likeliest next token after each position
    confidence: list[float]  # (L,): its probability
    nll: np.ndarray  # (L − 1,)


def read(weights: InductionWeights, tokens: torch.Tensor, causal: bool, ablate: tuple = ()) -> Reading:
    """Every head's pattern on one sequence ``tokens (1, L)`` (on the weights' device), the model's guesses and
    each prediction's loss."""
    with torch.no_grad():
        fw = forward(weights, tokens, causal=causal, ablate=ablate, keep=True)
        assert fw.patterns is not None
        probs = torch.softmax(fw.logits[0].float(), dim=-1)  # (L, V)
        nll = -torch.log(probs[:-1].gather(-1, tokens[0, 1:, None]).clamp_min(1e-30)).squeeze(-1)  # (L−1,)
        patterns = torch.stack([p[0] for p in fw.patterns]).float().cpu().numpy()  # (layers, H, L, L)
        return Reading(patterns, probs.argmax(-1).tolist(), probs.max(-1).values.tolist(), nll.cpu().numpy())


def example_tokens(run: Run) -> torch.Tensor:
    """The one repeated sequence every figure of a run is drawn on: the held-out batch's first, ``(1, 2·half)``."""
    return eval_tokens(run.weights.config, run.settings["seed"], "cpu")[:1]


@dataclass(frozen=True)
class RunView:
    """What the Train tab shows of a run: its history, its heads on the example sequence, its final scores."""

    history: History
    tokens: list[int]  # (2·half,): the example sequence
    example: Reading
    scores: Scores
    seed: int
    steps: int  # the steps asked for (a stopped run's history ends before)
    vocab: int
    half: int
    layers: int
    heads: int
    phase: int | None  # the step of the phase change, if it came


@st.cache_data(max_entries=64, show_spinner=False)
def view(name: str) -> RunView:
    run = run_of(name)
    cfg, tokens = run.weights.config, example_tokens(run)
    h = History.of(run.history)
    return RunView(h, tokens[0].tolist(), read(run.weights, tokens, run.settings["causal"]), Scores.of(run.scores),
                   run.settings["seed"], run.settings["steps"], cfg.vocab, cfg.half, cfg.layers, cfg.n_heads,
                   phase_change_step(h.step, h.loss_repeat, cfg.vocab))  # fmt: skip


@dataclass(frozen=True)
class Ablation:
    """A run with some heads zeroed: its scores on the held-out batch, the loss of each prediction along the
    sequence (mean over the batch), and its heads on the example sequence."""

    scores: Scores
    per_position: np.ndarray  # (2·half − 1,)
    example: Reading


@st.cache_data(max_entries=128, show_spinner=False)
def ablation(name: str, cut: tuple[tuple[int, int], ...]) -> Ablation:
    """The run with the heads ``cut`` (``(layer, head)`` pairs) zeroed."""
    run = run_of(name)
    causal, batch = run.settings["causal"], eval_tokens(run.weights.config, run.settings["seed"], "cpu")
    with torch.no_grad():
        s = head_scores(run.weights, batch, causal=causal, ablate=cut)
        logp = torch.log_softmax(forward(run.weights, batch, causal=causal, ablate=cut).logits[:, :-1].float(), -1)
        per_position = -logp.gather(-1, batch[:, 1:, None]).squeeze(-1).mean(0)  # (N, L−1, V) -> (L−1,)
    return Ablation(Scores.of(s), per_position.numpy(), read(run.weights, example_tokens(run), causal, cut))


@st.cache_data(max_entries=128, show_spinner=False)
def read_sequence(name: str, tokens: tuple[int, ...]) -> Reading:
    """The run reading ``tokens``."""
    run = run_of(name)
    return read(run.weights, torch.tensor([tokens], dtype=torch.long), run.settings["causal"])


def run_from(records: list[Progress], settings: dict[str, Any]) -> Run:
    """A viewer's run from its records so far (the last holds the live weights, copied here)."""
    w = snapshot(records[-1].weights, "cpu")  # the page reads runs on the CPU, wherever they trained
    return Run(w, settings, [history_row(p) for p in records], scores_of(w, settings["causal"], settings["seed"]))

