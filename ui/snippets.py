"""Code the pages show, written for the numbers on screen, so a viewer can run it and get them."""

from __future__ import annotations

import torch

from attention_core.walkthrough import WalkthroughResult


def _literal(t: torch.Tensor) -> str:
    rows = t.detach().to("cpu", torch.float32).tolist()
    body = ",\n    ".join("[" + ", ".join(f"{x:.6g}" for x in row) + "]" for row in rows)
    return f"torch.tensor([\n    {body},\n])"


def walkthrough_snippet(result: WalkthroughResult) -> str:
    """A short, self-contained torch script that reproduces the walkthrough's matrices."""
    inp, tr = result.inputs, result.trace
    lines = [
        "import math",
        "import torch",
        "",
        f"# {inp.name} preset: {inp.n_q} queries, {inp.n_k} keys, d_k = {inp.d_k}, d_v = {inp.d_v}",
        f"Q = {_literal(inp.q)}",
        f"K = {_literal(inp.k)}",
        f"V = {_literal(inp.v)}",
        "",
        "scores = Q @ K.T                                  # step 1: (n_q, n_k)",
    ]
    if tr.scale == 1.0:
        lines.append("scaled = scores                                  # step 2: scaling switched off")
    else:
        lines.append(f"scaled = scores / math.sqrt({inp.d_k})                # step 2")
    if result.mask is None:
        lines.append("masked = scaled                                  # step 3: no mask")
    else:
        n_q, n_k = inp.n_q, inp.n_k
        if result.mask_kind == "causal":
            lines.append(f"allowed = torch.ones({n_q}, {n_k}, dtype=torch.bool).tril()")
        else:
            lines.append(f"allowed = (torch.arange({n_k}) < {result.valid_keys}).expand({n_q}, {n_k})")
        lines.append("masked = scaled.masked_fill(~allowed, float('-inf'))  # step 3")
    lines += [
        "m = masked.amax(-1, keepdim=True).clamp_min(-1e30)  # a fully masked row has max −inf",
        "e = torch.exp(masked - m)",
        "weights = torch.nan_to_num(e / e.sum(-1, keepdim=True))  # step 4: rows sum to 1 (or 0)",
        "output = weights @ V                             # step 5: (n_q, d_v)",
        "print(weights.round(decimals=3))",
        "print(output.round(decimals=3))",
    ]
    return "\n".join(lines) + "\n"
