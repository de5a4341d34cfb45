"""Code the pages show, written for the numbers on screen, so a viewer can run it and get them."""

from __future__ import annotations

import torch

from attention_core.heads import check_head_counts, head_size
from attention_core.validation import check_ints
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
        if result.mask_kind == "causal":
            lines.append(f"allowed = torch.ones({inp.n_q}, {inp.n_k}, dtype=torch.bool).tril()")
        else:
            lines.append(f"allowed = (torch.arange({inp.n_k}) < {result.valid_keys}).expand({inp.n_q}, {inp.n_k})")
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


def split_snippet(n_tokens: int, d_model: int, n_heads: int, n_kv_heads: int | None = None) -> str:
    """The split into heads as code, nanoGPT's way, with this setting's shape after each line."""
    T, C = check_ints(n_tokens=n_tokens, d_model=d_model, low=1)
    h, g = check_head_counts(n_heads, n_kv_heads)
    hs = head_size(C, h)
    kv, r = ("nh", 1) if g == h else ("n_kv", h // g)
    rows: list[tuple[str, str]] = [
        ("B, T, C = x.shape", f"({1}, {T}, {C})  batch, tokens, d_model"),
        (f"nh, hs = {h}, C // {h}", f"{h} heads of d_k = {C} / {h} = {hs}"),
        ("q = x @ W_q", f"(1, {T}, {C})"),
        ("q = q.view(B, T, nh, hs)", f"(1, {T}, {h}, {hs})  {C} features → {h} slices"),
        ("q = q.transpose(1, 2)", f"(1, {h}, {T}, {hs})  one {T}×{hs} matrix per head"),
        *([(f"n_kv = {g}", f"K/V heads; each serves {r} query heads")] if r > 1 else []),
        (f"k = (x @ W_k).view(B, T, {kv}, hs).transpose(1, 2)", f"(1, {g}, {T}, {hs})"),
        (f"v = (x @ W_v).view(B, T, {kv}, hs).transpose(1, 2)", f"(1, {g}, {T}, {hs})"),
    ]
    if r > 1:  # grouped-query: each K/V head repeated for the query heads it serves
        rows += [
            (f"k = k.repeat_interleave({r}, dim=1)", f"(1, {h}, {T}, {hs})  query head i reads K/V head i // {r}"),
            (f"v = v.repeat_interleave({r}, dim=1)", f"(1, {h}, {T}, {hs})"),
        ]
    rows += [
        ("att = q @ k.transpose(-2, -1) / math.sqrt(hs)", f"(1, {h}, {T}, {T})  one {T}×{T} score map per head"),
        ("att = att.softmax(dim=-1)", f"(1, {h}, {T}, {T})  each row sums to 1"),
        ("y = att @ v", f"(1, {h}, {T}, {hs})"),
        ("y = y.transpose(1, 2).reshape(B, T, C)", f"(1, {T}, {C})  the heads side by side again"),
        ("y = y @ W_o", f"(1, {T}, {C})  W_o mixes what the heads found"),
    ]
    width = max(len(code) for code, _ in rows) + 2
    return "\n".join(f"{code:<{width}}# {shape}" for code, shape in rows) + "\n"
