"""The walkthrough's figures, each built from the cached result for the controls' values (:class:`.data.Settings`,
plain values, so ``draw.figure`` keeps each built figure without hashing anything big)."""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from figures.walkthrough import matrix_heatmap, output_blend, query_scores, query_weights
from ui.walkthrough.data import Settings, Walkthrough, backward_data, walkthrough_data

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
