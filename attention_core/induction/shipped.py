"""The trained models shipped in the repository, and the command that makes them again.

One safetensors file, ``trained.safetensors`` beside this module, holds three runs of :func:`.train`, each
under its own prefix: ``induction.`` (two layers: the circuit forms), ``one_layer.`` (one layer: nothing to
compose with) and ``no_mask.`` (two layers without the causal mask: the answer is in view). The file's
metadata records, for each run, its settings, its training history (one row per record) and the scores
its final weights reach on the held-out batch, so a test can check the weights against them.

Remake it (a few minutes on a 2-core CPU) with::

    python -m attention_core.induction --out attention_core/induction/trained.safetensors
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import torch

from ..device import new_tensor_device
from ..validation import check_choice
from .model import InductionConfig, InductionWeights
from .training import Progress, eval_tokens, head_scores, train

SHIPPED = Path(__file__).with_name("trained.safetensors")
FORMAT = "attention-dashboard induction runs, version 1"
# Each shipped run: its name, and train()'s arguments.
RUNS: dict[str, dict[str, Any]] = {
    "induction": {"layers": 2, "causal": True, "steps": 1200},
    "one_layer": {"layers": 1, "causal": True, "steps": 1500},
    "no_mask": {"layers": 2, "causal": False, "steps": 400},
}
SEED = 0
EVERY = 10


@dataclass(frozen=True)
class Run:
    """A shipped run: its weights, its settings, its history and the scores it was saved with."""

    weights: InductionWeights
    settings: dict[str, Any]
    history: list[dict[str, Any]]  # one row per record: a Progress without its weights
    scores: dict[str, Any]  # head_scores() of the final weights on the held-out batch, as lists


def history_row(p: Progress) -> dict[str, Any]:
    """A :class:`Progress` as plain numbers (no weights): what a history keeps of each record."""
    return {f.name: getattr(p, f.name) for f in fields(p) if f.name != "weights"}


def scores_of(weights: InductionWeights, causal: bool, seed: int = SEED) -> dict[str, Any]:
    """:func:`.head_scores` on the held-out batch, as plain lists (what the file records)."""
    s = head_scores(weights, eval_tokens(weights.config, seed, weights.device), causal=causal)
    return {k: v.tolist() for k, v in s.items()}


def make_runs(device: str | torch.device | None = None, log: Any = None) -> dict[str, Run]:
    """Train every run of :data:`RUNS` from seed :data:`SEED`; ``log(name, progress)`` sees each record."""
    out = {}
    for name, kw in RUNS.items():
        history, weights = [], None
        for p in train(seed=SEED, every=EVERY, device=device, single_thread=True, **kw):
            history.append(history_row(p))
            weights = p.weights
            if log is not None:
                log(name, p)
        assert weights is not None
        frozen = snapshot(weights)
        settings = {"seed": SEED, "every": EVERY, **kw, "config": asdict(weights.config), "single_thread": True}
        out[name] = Run(frozen, settings, history, scores_of(frozen, kw["causal"]))
    return out


def save_runs(runs: dict[str, Run], path: str | Path) -> None:
    """Write ``runs`` to one safetensors file (weights as float32 on the CPU, the rest as metadata)."""
    from safetensors.torch import save_file

    tensors, meta = {}, {"format": FORMAT}
    for name, run in runs.items():
        tensors |= {f"{name}.{k}": v.detach().float().cpu().contiguous() for k, v in run.weights.named().items()}
        meta[f"{name}.settings"] = json.dumps(run.settings)
        meta[f"{name}.history"] = json.dumps(run.history, separators=(",", ":"))
        meta[f"{name}.scores"] = json.dumps(run.scores)
    save_file(tensors, str(path), metadata=meta)


def load_run(name: str = "induction", path: str | Path = SHIPPED, device: str | torch.device | None = None) -> Run:
    """One run of the shipped file, its weights on ``device`` (default: torch's default device)."""
    from safetensors import safe_open

    name = check_choice("name", name, RUNS)
    dev = new_tensor_device(device)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
        if meta.get("format") != FORMAT or f"{name}.settings" not in meta:
            raise ValueError(f"{path} is not a file of induction runs holding {name!r}")
        settings = json.loads(meta[f"{name}.settings"])
        config = InductionConfig(**settings["config"])
        weights = InductionWeights.from_named(config, lambda key: f.get_tensor(f"{name}.{key}").to(dev))
        return Run(weights, settings, json.loads(meta[f"{name}.history"]), json.loads(meta[f"{name}.scores"]))


def snapshot(w: InductionWeights, device: str | torch.device | None = None) -> InductionWeights:
    """A detached copy of ``w`` (on ``device``, default: where ``w`` is): a snapshot the optimiser no longer moves."""
    dev = w.device if device is None else new_tensor_device(device)
    named = w.named()
    return InductionWeights.from_named(w.config, lambda key: named[key].detach().to(dev, copy=True))
