"""Run the Triton kernel under Triton's CPU interpreter and print its errors as JSON.

``tests/test_tiled_triton.py`` starts this in a fresh process, because ``TRITON_INTERPRET``
must be set before Triton is first imported, and in a test session something else may have
imported it already (``torch._dynamo`` does, whenever Triton is installed). Each case is
computed here and judged there, so every case still passes or fails on its own.

    python tests/triton_interpreter_cases.py  # sets TRITON_INTERPRET=1; prints {"cases": [...], ...}

Importing this module sets nothing: the test file imports it only for :func:`case_list`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import torch.nn.functional as F

from attention_core import dot_product_attention
from attention_core.bench import BenchConfig, run_config
from attention_core.tiled_triton import tiled_triton_attention

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
SELF_ATTENTION_NS = (1, 17, 64, 130)  # 130 = 8 tiles of 16 and a ragged 2
HEAD_DIMS = (32, 64, 128)
CROSS = ((37, 100, 16), (100, 37, 16))  # n_q ≠ n_k: top-left causal alignment, d = 16


def case_list() -> list[dict]:
    cases = [
        {"dtype": dtype, "causal": causal, "n_q": n, "n_k": n, "d": d}
        for dtype in ("float32", "float16")
        for causal in (False, True)
        for d in HEAD_DIMS
        for n in SELF_ATTENTION_NS
    ]
    cases += [
        {"dtype": "float32", "causal": causal, "n_q": n_q, "n_k": n_k, "d": d}
        for causal in (False, True)
        for n_q, n_k, d in CROSS
    ]
    cases.append({"dtype": "bfloat16", "causal": False, "n_q": 33, "n_k": 33, "d": 32})
    return cases


def errors(dtype: str, causal: bool, n_q: int, n_k: int, d: int) -> dict:
    gen = torch.Generator().manual_seed(n_q * 1000 + n_k + d)
    q = torch.randn(1, 1, n_q, d, generator=gen).to(DTYPES[dtype])  # (N, H, L, E)
    k = torch.randn(1, 1, n_k, d, generator=gen).to(DTYPES[dtype])  # (N, H, S, E)
    v = torch.randn(1, 1, n_k, d, generator=gen).to(DTYPES[dtype])  # (N, H, S, Ev)
    with torch.no_grad():
        out = tiled_triton_attention(q, k, v, is_causal=causal)
        ref = dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
        plain = dot_product_attention(q, k, v, is_causal=causal)  # the traced path, same dtype
        fused = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return {
        "shape": list(out.shape),
        "out_dtype": str(out.dtype).removeprefix("torch."),
        "err": float((out.double() - ref).abs().max()),
        "plain_err": float((plain.double() - ref).abs().max()),
        "sdpa_diff": float((out.double() - fused.double()).abs().max()),
    }


def broadcast_case() -> dict:
    """Leading dims that broadcast, n_q ≠ n_k, Ev ≠ E, a custom scale, causal: the wrapper's reshapes."""
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(2, 1, 50, 32, generator=gen)  # (N, 1, L, E)
    k = torch.randn(1, 3, 70, 32, generator=gen)  # (1, H, S, E)
    v = torch.randn(1, 3, 70, 64, generator=gen)  # (1, H, S, Ev)
    with torch.no_grad():
        out = tiled_triton_attention(q, k, v, is_causal=True, scale=0.3)
        ref = dot_product_attention(q.double(), k.double(), v.double(), is_causal=True, scale=0.3)
        plain = dot_product_attention(q, k, v, is_causal=True, scale=0.3)
    return {
        "shape": list(out.shape),
        "err": float((out.double() - ref).abs().max()),
        "plain_err": float((plain.double() - ref).abs().max()),
    }


def registry_row() -> dict:
    """The benchmark's own path: the registry entry measured by ``run_config`` on the CPU."""
    row = run_config(BenchConfig("tiled-triton", n=40, d=32, heads=2, dtype="float16", causal=True), min_run_time=0.0)
    return {"status": row.status, "backend": row.backend, "note": row.note}


if __name__ == "__main__":
    # Before the first kernel call imports Triton (attention_core itself never imports it).
    os.environ["TRITON_INTERPRET"] = "1"
    results = [{**case, **errors(**case)} for case in case_list()]
    json.dump({"cases": results, "broadcast": broadcast_case(), "registry": registry_row()}, sys.stdout)
