"""The tiled online softmax as a GPU kernel: the Python side (checks, grid, launch).

The kernel (:mod:`attention_core.tiled_triton_kernel`) and Triton are imported by the first call, since the app
also runs where there is none. It runs on CUDA, and for tests on CPU tensors under Triton's interpreter
(``TRITON_INTERPRET=1`` set before Triton is first imported).
"""

from __future__ import annotations

import ast
import importlib.util
import math
import os
from pathlib import Path

import torch

from .attention import check_attention_args
from .validation import broadcast_shapes, check_int, check_ints

NEEDS_GPU = "needs a CUDA GPU with Triton"
HEAD_DIMS = (16, 32, 64, 128)  # powers of two: tl.dot needs ≥ 16 and the tiles must fit in SRAM
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
LOG2_E = math.log2(math.e)


def interpreting() -> bool:
    """Whether ``TRITON_INTERPRET`` asks Triton to run kernels on the CPU (the test mode)."""
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "yes", "on")


def triton_available(device: torch.device | str) -> str | None:
    """``None`` if the kernel can run on ``device`` (CUDA, or the CPU under the interpreter, with the
    ``triton`` package, looked for without importing it); otherwise the reason, as a sentence."""
    dev = torch.device(device)
    runs_here = dev.type == "cuda" or (dev.type == "cpu" and interpreting())
    return None if runs_here and importlib.util.find_spec("triton") is not None else NEEDS_GPU


def tiled_triton_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False,
    *, scale: float | None = None,
) -> torch.Tensor:  # fmt: skip
    """softmax(Q Kᵀ · scale) V in one Triton kernel launch, without the ``L × S`` scores.

    Arguments as :func:`attention_core.tiled.tiled_attention`, except: float16, bfloat16 or float32;
    E and Ev powers of two in 16…128; no ``attn_mask`` and no dropout; forward only. Returns
    ``(N, ..., L, Ev)`` in ``q``'s dtype; float32 inputs multiply in full float32, never TF32.
    """
    s, p = check_attention_args(q, k, v, attn_mask, dropout_p, is_causal, scale, positive_scale=True, min_length=1)
    if attn_mask is not None:
        raise ValueError(
            "tiled_triton_attention implements no attn_mask (boolean or float); pass is_causal=True for the "
            "causal mask, or use tiled_attention for other masks"
        )
    if p > 0.0:
        raise ValueError(f"tiled_triton_attention does not implement dropout; dropout_p must be 0, got {p}")
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise ValueError(
            "tiled_triton_attention is forward-only; call it under torch.no_grad(), or use "
            "dot_product_attention when gradients are needed"
        )
    if q.dtype not in DTYPES:
        raise ValueError(f"tiled_triton_attention takes float16, bfloat16 or float32 inputs, got {q.dtype}")
    E, Ev = q.shape[-1], v.shape[-1]
    if E not in HEAD_DIMS or Ev not in HEAD_DIMS:
        raise ValueError(
            f"tiled_triton_attention needs head sizes E and Ev in {', '.join(map(str, HEAD_DIMS))}, got E={E}, Ev={Ev}"
        )
    f32 = torch.finfo(torch.float32)
    if not f32.tiny <= s * LOG2_E <= f32.max:  # the kernel gets scale·log2(e) as a normal float32
        raise ValueError(f"tiled_triton_attention needs a scale between {f32.tiny:.1e} and {f32.max:.1e}, got {s}")
    reason = triton_available(q.device)
    if reason:
        raise ValueError(f"tiled_triton_attention {reason}; these inputs are on {q.device}")

    from .tiled_triton_kernel import attention_forward_kernel  # imports Triton: the first call pays for it

    L, S = q.shape[-2], k.shape[-2]
    lead = broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    # One flat (batch·head) axis for the grid; a view when q, k, v are (N, H, ·, ·) already.
    q3 = q.expand(*lead, L, E).reshape(-1, L, E)  # (BH, L, E)
    k3 = k.expand(*lead, S, E).reshape(-1, S, E)  # (BH, S, E)
    v3 = v.expand(*lead, S, Ev).reshape(-1, S, Ev)  # (BH, S, Ev)
    out = torch.empty((q3.shape[0], L, Ev), dtype=q.dtype, device=q.device)  # (BH, L, Ev)
    if out.numel() == 0:  # an empty batch: nothing to launch (a grid with a zero axis is an error)
        return out.reshape(*lead, L, Ev)

    def grid(meta: dict) -> tuple[int, int]:
        return (math.ceil(L / meta["BLOCK_M"]), q3.shape[0])  # (query blocks, batch·heads)

    attention_forward_kernel[grid](
        q3, k3, v3, out,
        *q3.stride(), *k3.stride(), *v3.stride(), *out.stride(),
        L, S,
        s * LOG2_E,
        HEAD_DIM=E,
        HEAD_DIM_V=Ev,
        IS_CAUSAL=bool(is_causal),
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        enable_fp_fusion=True,  # a·b + c as one FMA, Triton's default so far; said, so Triton 3.9 does not warn
    )  # fmt: skip
    return out.reshape(*lead, L, Ev)  # (N, ..., L, Ev)


def tiled_triton_extra_bytes(n_q: int, d_v: int, *, itemsize: int, batch_heads: int = 1) -> int:
    """Predicted peak memory of :func:`tiled_triton_attention` beyond its inputs, in bytes: the output
    only, since the running ``m``, ``l`` and the tiles live in registers and on-chip memory."""
    n_q, d_v, batch_heads = check_ints(n_q=n_q, d_v=d_v, batch_heads=batch_heads, low=1)
    itemsize = check_int("itemsize", itemsize, low=1, high=8)
    return batch_heads * n_q * d_v * itemsize  # (N, H, L, Ev)


def triton_kernel_sources() -> dict[str, str]:
    """The recurrence's two implementations as source to show side by side, by file name, decorators kept and
    docstrings left out; cut from the files with :mod:`ast`, so no Triton is needed."""
    sources = {}
    for file, name in (("tiled.py", "tiled_attention"), ("tiled_triton_kernel.py", "attention_forward_kernel")):
        text = (Path(__file__).parent / file).read_text(encoding="utf-8")
        node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        doc = range(node.body[0].lineno, node.body[0].end_lineno + 1) if ast.get_docstring(node) else range(0)
        lines = text.splitlines()[first - 1 : node.end_lineno]
        sources[file] = "\n".join(line for i, line in enumerate(lines, first) if i not in doc)
    return sources
