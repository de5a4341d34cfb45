"""The walkthrough's numbers: the core's result (:func:`walkthrough_data`) and backward pass (:func:`backward_data`)
cached on the controls' values (:class:`Settings`), and the figures built from them, keyed on the same values."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import TypeVar

import plotly.graph_objects as go
import streamlit as st
import torch

from attention_core.backward import BackwardTrace
from attention_core.presets import MODEL_HEAD, MODEL_LAYER, MODEL_TEXT, WalkthroughInputs
from attention_core.walkthrough import WalkthroughResult, run_walkthrough, walkthrough_backward
from figures.walkthrough import matrix_heatmap, output_blend, query_scores, query_weights
from ui.decoder.snippet import decoder_head_snippet
from ui.device import DEVICE
from ui.model import encoder, unknown_words
from ui.snippets import walkthrough_snippet

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """The walkthrough's controls, named as :func:`run_walkthrough`'s arguments; ``text``, ``layer`` and ``head``
    are the trained model's own three."""

    preset: str
    mask: str
    scaled: bool
    positions: bool
    n: int
    d_model: int
    d_k: int
    d_v: int
    seed: int
    pad: int
    dropout_p: float
    text: str = MODEL_TEXT
    layer: int = MODEL_LAYER
    head: int = MODEL_HEAD


@dataclass(frozen=True)
class Walkthrough:
    """The core's result for the controls' values (its inputs, mask, trace and checks) and what the page writes
    beside it: where the numbers come from, the code that reproduces them, each query's two main sources."""

    result: WalkthroughResult
    note: str
    snippet: str
    top: list[list[tuple[str, float]]]

    @property
    def blocked(self) -> torch.Tensor:
        """Bool ``(n_q, n_k)``: the cells the mask blocks."""
        r = self.result
        return ~r.mask if r.mask is not None else torch.zeros(r.inputs.n_q, r.inputs.n_k, dtype=torch.bool)


@dataclass(frozen=True)
class Backward:
    """The backward pass for one upstream gradient dO, step by step, and its largest difference from autograd."""

    steps: BackwardTrace
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
    unknown = f" Not in the vocabulary, read as [UNK]: {unknown_words(inp.unknown)}." if inp.unknown else ""
    return text + unknown


def _on_host(obj: T) -> T:
    """A dataclass with each tensor field copied to the host, holding only its own numbers: the cache pickles it on
    every call, and a head's weights are views of its layer's, which would otherwise be pickled whole."""
    tensors = {f.name: v for f in fields(obj) if torch.is_tensor(v := getattr(obj, f.name))}  # type: ignore[arg-type]
    return replace(obj, **{k: v.detach().to("cpu", copy=True) for k, v in tensors.items()})  # type: ignore[type-var]


@st.cache_data(max_entries=128, show_spinner=False)
def walkthrough_data(s: Settings) -> Walkthrough:
    """The core's result and what the page writes beside it, for the controls' values."""
    model = None
    if s.preset == "model":  # the trained encoder, loaded once per server, only when this preset is chosen
        model = encoder()
    elif s.preset == "decoder":  # the trained decoder, likewise
        from ui.decoder.model import decoder

        model = decoder()
    r = run_walkthrough(**asdict(s), model=model, device=DEVICE)
    r = _on_host(replace(r, inputs=_on_host(r.inputs), trace=_on_host(r.trace)))
    shares, keys = r.trace.weights.sort(dim=-1, descending=True, stable=True)  # (L, S) each, largest first
    top = [[(r.inputs.key_tokens[j], w) for j, w in zip(k[:2], p[:2], strict=True) if w > 0]
           for k, p in zip(keys.tolist(), shares.tolist(), strict=True)]  # fmt: skip
    return Walkthrough(
        result=r, note=note(r.inputs, s),
        snippet=walkthrough_snippet(r) if s.preset != "decoder" else decoder_head_snippet(s.text, s.layer, s.head),
        top=top,
    )  # fmt: skip


@st.cache_data(max_entries=64, show_spinner=False)
def backward_data(upstream: str, row: int, s: Settings) -> Backward:
    """The backward pass of the walkthrough's trace for one upstream gradient, and its check against autograd."""
    return Backward(*walkthrough_backward(walkthrough_data(s).result, upstream, row=row))

# The backward pass's steps: (matrix, its formula, rows, columns, what it says).
BACKWARD = [
    ("grad_output", r"dO = \frac{\partial L}{\partial O}", "query_tokens", "d_v",
     "How the loss changes with each entry of the output: where the backward pass starts."),
    ("grad_v", r"dV = P^\top dO", "key_tokens", "d_v",
     "Each value row gets back the gradient of every output row that used it, weighted as much as it was used."),
    ("grad_weights", r"dP = dO\,V^\top", "query_tokens", "key_tokens",
     "How the loss changes with each weight: the output row's gradient, dotted with the value row it weighted."),
    ("row_dot", r"D_i = \textstyle\sum_j dO_{ij}\, O_{ij} = \sum_j P_{ij}\, dP_{ij}", "query_tokens", "one",
     "One number per query: the weight-averaged dP of its row. Softmax's backward needs nothing else from "
     "the forward pass but P itself."),
    ("grad_scores", r"dS = P \circ (dP - D)", "query_tokens", "key_tokens",
     "Softmax's backward: each weight's gradient minus its row's average, times the weight. A blocked key "
     "(P = 0) gets exactly 0."),
    ("grad_q", r"dQ = dS\,K \cdot \mathrm{scale}", "query_tokens", "d_k",
     "Back through QKᵀ and the scale, to the queries."),
    ("grad_k", r"dK = dS^\top Q \cdot \mathrm{scale}", "key_tokens", "d_k", "…and to the keys."),
]  # fmt: skip


def labels(d: Walkthrough, name: str) -> list[str]:
    """Axis labels by name: the tokens (``query_tokens``, ``key_tokens``), feature indices 0…d-1 of ``d_k``, ``d_v``
    or ``d_model``, or "D" for ``one`` column."""
    if name == "one":
        return ["D"]
    value = getattr(d.result.inputs, name)
    return list(value) if isinstance(value, tuple) else [str(i) for i in range(value)]


def matrix(d: Walkthrough, name: str) -> torch.Tensor:
    """A matrix by its name in the core's result: an input (``x_kv``, ``w_q``, ``q``…) or a step of the trace."""
    r = d.result
    return getattr(r.trace if hasattr(r.trace, name) else r.inputs, name)


def heatmap_figure(s: Settings, name: str, rows: str, cols: str, talk: bool, opts: tuple) -> go.Figure:
    d = walkthrough_data(s)
    kw = dict(opts)
    if kw.pop("use_blocked", False):
        kw["blocked"] = d.blocked
    if kw.pop("use_dropped", False):
        kw["dropped"] = ~d.result.trace.dropout_keep  # type: ignore[operator]
    return matrix_heatmap(matrix(d, name), labels(d, rows), labels(d, cols), talk=talk, **kw)


def query_figure(s: Settings, kind: str, i: int, talk: bool) -> go.Figure:
    d = walkthrough_data(s)
    t, keys = d.result.trace, d.result.inputs.key_tokens
    if kind == "scores":
        return query_scores(t.scores[i], t.scaled[i], keys, scale=t.scale, talk=talk)
    if kind == "weights":
        return query_weights(t.weights[i], keys, blocked=d.blocked[i], talk=talk)
    return output_blend(t.weights[i], d.result.inputs.v, keys, talk=talk)


def backward_figure(
    s: Settings, upstream: str, row: int, i: int, talk: bool, width: int, height: int | None
) -> go.Figure:
    b, d = backward_data(upstream, row, s), walkthrough_data(s)
    name, _formula, rows, cols, _text = BACKWARD[i]
    return matrix_heatmap(getattr(b.steps, name), labels(d, rows), labels(d, cols), kind="signed", talk=talk,
                          width=width, height=height, colorbar=cols != "one")  # fmt: skip
