"""The walkthrough's numbers: the controls' values (:class:`Settings`), the core's trace for them as plain numpy
arrays (:func:`walkthrough_data`) and its backward pass (:func:`backward_data`), cached on those values."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import streamlit as st

from attention_core.presets import MODEL_HEAD, MODEL_LAYER, MODEL_TEXT, WalkthroughInputs
from attention_core.walkthrough import (
    WalkthroughResult,
    run_walkthrough,
    top_sources,
    upstream_gradient,
    walkthrough_backward,
)
from ui.decoder.snippet import decoder_head_snippet
from ui.device import DEVICE
from ui.snippets import walkthrough_snippet


@dataclass(frozen=True)
class Settings:
    """The walkthrough's controls, named as they are in the link; ``text``, ``layer`` and ``head`` are the
    trained model's own three."""

    preset: str
    mask: str
    scaled: bool
    pos: bool
    n: int
    d_model: int
    d_k: int
    d_v: int
    seed: int
    pad: int
    drop: float
    text: str = MODEL_TEXT
    layer: int = MODEL_LAYER
    head: int = MODEL_HEAD


@dataclass(frozen=True)
class Walkthrough:
    """The trace and its checks as plain numpy arrays: the inputs and projections, the five steps' matrices
    ``(n_q, n_k)`` (the output ``(n_q, d_v)``), the cells the mask blocks, and the checks against one core
    call and torch SDPA."""

    q_tokens: list[str]
    k_tokens: list[str]
    note: str
    x_q: np.ndarray
    x_kv: np.ndarray
    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    scaled: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    dropped: np.ndarray
    keep: np.ndarray | None
    blocked: np.ndarray
    scale: float
    valid: list[int] | None
    fully_masked: list[int]
    delta_core: float
    delta_torch: float
    row_sum_error: float | None
    snippet: str
    preset: str
    top: list[list[tuple[str, float]]]
    d_k: int
    d_v: int
    d_model: int


@dataclass(frozen=True)
class Backward:
    """The backward pass for one upstream gradient dO, step by step, and its largest difference from autograd."""

    grad_output: np.ndarray
    grad_v: np.ndarray
    grad_weights: np.ndarray
    row_dot: np.ndarray
    grad_scores: np.ndarray
    grad_q: np.ndarray
    grad_k: np.ndarray
    delta_autograd: float


def note(inp: WalkthroughInputs, s: Settings) -> str:
    """Where the preset's numbers come from, in a sentence."""
    if inp.name == "tiny":
        return "Small integers, so every product can be checked by hand." + (
            " Positions are added, so the inputs are no longer whole numbers." if inp.positions else ""
        )
    if inp.name == "sentence":
        return (
            "Word vectors are seeded random numbers plus a few hand-set shared features ('animal', 'it' and "
            "'tired' share one), so related words look alike. The projections are random, not trained."
        )
    if inp.name == "random":
        return f"Gaussian inputs from seed {s.seed}; projections scaled by 1/√d_model."
    if inp.name == "decoder":
        kind = "global: full causal" if s.layer in (5, 11, 17) else "local: a window of 512, wider than this text"
        return (
            f"Real weights: gemma-3-270m, layer {s.layer} ({kind}), query head {s.head} (counted from 0), which "
            f"reads the layer's one key/value head with its three other query heads. X is what layer {s.layer}'s "
            "attention reads, after its RMSNorm. Q and K are X·W, then RMS-normalised (QK-norm) and rotated by "
            "position (RoPE): step 0 shows the Q and K the scores use, so Q ≠ X·W_Q here."
            + ("" if s.mask == "causal" else " The model itself uses the causal mask: choose it to see "
               "the weights it computes.")
        )  # fmt: skip
    reads = "the embeddings" if s.layer == 0 else f"the output of layer {s.layer - 1}"
    text = (
        f"Real weights: all-MiniLM-L6-v2, layer {s.layer}, head {s.head} (counted from 0). X is what layer "
        f"{s.layer} reads ({reads}), with a last column of 1s so that each W's last row is the projection's bias."
    )
    unknown = f" Not in the vocabulary, read as [UNK]: {', '.join(map(repr, inp.unknown))}." if inp.unknown else ""
    return text + unknown


def _run(s: Settings) -> WalkthroughResult:
    model = None
    if s.preset == "model":  # the trained encoder, loaded once per server, only when this preset is chosen
        from ui.model import encoder

        model = encoder()
    elif s.preset == "decoder":  # the trained decoder, likewise
        from ui.decoder.model import decoder

        model = decoder()
    return run_walkthrough(
        s.preset, n=s.n, d_model=s.d_model, d_k=s.d_k, d_v=s.d_v, seed=s.seed, mask=s.mask, pad=s.pad,
        scaled=s.scaled, positions=s.pos, dropout_p=s.drop, text=s.text, layer=s.layer, head=s.head, model=model,
        device=DEVICE,
    )  # fmt: skip


def _cpu(x: object) -> np.ndarray:
    return x.detach().cpu().numpy()  # type: ignore[attr-defined]


@st.cache_data(max_entries=128, show_spinner=False)
def walkthrough_data(s: Settings) -> Walkthrough:
    """The trace and its checks for the controls' values."""
    r = _run(s)
    t, inp = r.trace, r.inputs
    return Walkthrough(
        q_tokens=list(inp.query_tokens), k_tokens=list(inp.key_tokens), note=note(inp, s),
        x_q=_cpu(inp.x_q), x_kv=_cpu(inp.x_kv), w_q=_cpu(inp.w_q), w_k=_cpu(inp.w_k), w_v=_cpu(inp.w_v),
        q=_cpu(inp.q), k=_cpu(inp.k), v=_cpu(inp.v),
        scores=_cpu(t.scores), scaled=_cpu(t.scaled), masked=_cpu(t.masked), weights=_cpu(t.weights),
        output=_cpu(t.output), dropped=_cpu(t.dropped),
        keep=_cpu(t.dropout_keep) if t.dropout_keep is not None else None,
        blocked=~_cpu(r.mask) if r.mask is not None else np.zeros((inp.n_q, inp.n_k), dtype=bool),
        scale=t.scale, valid=r.valid_keys, fully_masked=r.fully_masked,
        delta_core=r.delta_core, delta_torch=r.delta_torch, row_sum_error=r.row_sum_error,
        snippet=walkthrough_snippet(r) if s.preset != "decoder" else decoder_head_snippet(s.text, s.layer, s.head),
        preset=s.preset, top=[top_sources(t.weights[i], inp.key_tokens, k=2) for i in range(inp.n_q)],
        d_k=inp.d_k, d_v=inp.d_v, d_model=inp.d_model,
    )  # fmt: skip


@st.cache_data(max_entries=64, show_spinner=False)
def backward_data(upstream: str, row: int, s: Settings) -> Backward:
    """The backward pass of the walkthrough's trace for one upstream gradient, and its check against autograd."""
    r = _run(s)
    back, delta = walkthrough_backward(r, upstream_gradient(upstream, r, row=row))
    steps = {f.name: _cpu(getattr(back, f.name)) for f in fields(Backward) if f.name != "delta_autograd"}
    return Backward(**steps, delta_autograd=delta)
