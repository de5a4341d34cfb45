"""Dequantisation of the GGUF block formats this model's file uses, in torch.

Each format stores a row as blocks: a few scales (float16) and small integers packed into bytes.
The formulas are ggml's reference ones (``dequantize_row_*`` in ``ggml-quants.c``); every product
is taken in float32, as ggml does, then the result is cast to the dtype asked for. Vectorised over
all blocks at once, a 262,144 × 640 Q8_0 table takes well under a second on two cores, where the
``gguf`` package's numpy code takes over ten.

    Q8_0  (32 per block):   y = d · q                       q int8
    Q5_0  (32 per block):   y = d · (q − 16)                q 5 bits: 4 low in a nibble, 1 in a shared u32
    Q4_K  (256 per block):  y = d·sc_j · q − dmin·m_j       8 sub-blocks of 32, 6-bit sc_j and m_j, q 4 bits
    Q6_K  (256 per block):  y = d · sc_j · (q − 32)         16 sub-blocks of 16, int8 sc_j, q 6 bits
"""

from __future__ import annotations

import math

import torch

from .gguf_file import GGML_TYPES


def _f16(b: torch.Tensor) -> torch.Tensor:
    """Two uint8 columns ``(n, 2)`` read as little-endian float16, returned as float32 ``(n, 1)``."""
    return b.contiguous().view(torch.float16).to(torch.float32)  # (n, 1)


def _q8_0(b: torch.Tensor) -> torch.Tensor:  # b: (n_blocks, 34)
    d = _f16(b[:, :2])  # (n, 1)
    q = b[:, 2:].contiguous().view(torch.int8).to(torch.float32)  # (n, 32)
    return d * q  # (n, 32)


def _q5_0(b: torch.Tensor) -> torch.Tensor:  # b: (n_blocks, 22)
    n = b.shape[0]
    d = _f16(b[:, :2])  # (n, 1)
    shifts = torch.arange(8, dtype=torch.uint8, device=b.device)
    # element j's fifth bit is bit j of the little-endian u32: bit j % 8 of byte j // 8
    fifth = ((b[:, 2:6].unsqueeze(-1) >> shifts) & 1).reshape(n, 32)  # (n, 32) uint8
    qs = b[:, 6:]  # (n, 16): element j in the low nibble, element j + 16 in the high one
    low = torch.cat([qs & 0x0F, qs >> 4], dim=1)  # (n, 32) uint8
    return d * ((low | (fifth << 4)).to(torch.float32) - 16.0)  # (n, 32)


def _scale_min_k4(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The 8 six-bit scales and mins packed in 12 bytes ``(n, 12)`` → two ``(n, 8)`` int tensors."""
    s = s.to(torch.int64)
    lo_sc, lo_m = s[:, 0:4] & 63, s[:, 4:8] & 63  # sub-blocks 0..3
    hi_sc = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)  # sub-blocks 4..7
    hi_m = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return torch.cat([lo_sc, hi_sc], dim=1), torch.cat([lo_m, hi_m], dim=1)  # (n, 8), (n, 8)


def _q4_k(b: torch.Tensor) -> torch.Tensor:  # b: (n_blocks, 144)
    n = b.shape[0]
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])  # (n, 1)
    sc, m = _scale_min_k4(b[:, 4:16])  # (n, 8)
    qs = b[:, 16:].reshape(n, 4, 32)  # (n, 4 chunks, 32): chunk c holds sub-blocks 2c (low) and 2c+1 (high)
    q = torch.stack([qs & 0x0F, qs >> 4], dim=2).reshape(n, 8, 32).to(torch.float32)  # (n, 8, 32)
    d1 = (d * sc.to(torch.float32)).unsqueeze(-1)  # (n, 8, 1)
    m1 = (dmin * m.to(torch.float32)).unsqueeze(-1)  # (n, 8, 1)
    return (d1 * q - m1).reshape(n, 256)  # (n, 256)


def _q6_k(b: torch.Tensor) -> torch.Tensor:  # b: (n_blocks, 210)
    n = b.shape[0]
    ql = b[:, :128].to(torch.int64).reshape(n, 2, 2, 32)  # (n, half, [l, l+32], 32)
    qh = b[:, 128:192].to(torch.int64).reshape(n, 2, 1, 32)  # (n, half, 1, 32)
    sc = b[:, 192:208].contiguous().view(torch.int8).to(torch.float32)  # (n, 16)
    d = _f16(b[:, 208:210])  # (n, 1)
    shift = torch.tensor([0, 2, 4, 6], device=b.device).reshape(1, 1, 4, 1)
    high = (qh >> shift) & 3  # (n, half, 4, 32): bits for q1, q2, q3, q4
    low = torch.cat([ql & 0x0F, ql >> 4], dim=2)  # (n, half, 4, 32): q1, q2 low nibbles, then q3, q4 high
    q = ((low | (high << 4)) - 32).to(torch.float32)  # (n, half, 4, 32)
    # element 32·g + l of a half uses scale 8·half + 2·g + l // 16
    scales = sc.reshape(n, 2, 4, 2, 1).expand(n, 2, 4, 2, 16).reshape(n, 2, 4, 32)  # (n, half, 4, 32)
    return (d.reshape(n, 1, 1, 1) * scales * q).reshape(n, 256)  # (n, 256)


_KERNELS = {"Q8_0": _q8_0, "Q5_0": _q5_0, "Q4_K": _q4_k, "Q6_K": _q6_k}
CHUNK = 1 << 16  # blocks dequantised at a time


def dequantize(
    raw: torch.Tensor, ggml_type: int, shape: tuple[int, ...], dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The values of a tensor stored as ``raw`` bytes (uint8, 1-D) in ggml type ``ggml_type``, as ``shape``.

    Works 65,536 blocks at a time, so the float32 intermediates of a large table stay small.
    """
    if ggml_type not in GGML_TYPES:
        raise ValueError(f"ggml type {ggml_type} is not one this reader knows ({sorted(GGML_TYPES)})")
    name, per_block, block_bytes = GGML_TYPES[ggml_type]
    count = math.prod(shape)
    if raw.dtype != torch.uint8 or raw.dim() != 1 or raw.numel() != count // per_block * block_bytes:
        raise ValueError(f"{name} data for shape {shape} must be {count // per_block * block_bytes} bytes (uint8, 1-D)")
    if name == "F32":
        return raw.view(torch.float32).reshape(shape).to(dtype)
    if name == "F16":
        return raw.view(torch.float16).reshape(shape).to(dtype)
    blocks = raw.reshape(-1, block_bytes)  # (n_blocks, block_bytes)
    out = torch.empty(blocks.shape[0], per_block, dtype=dtype, device=raw.device)  # (n_blocks, per_block)
    kernel = _KERNELS[name]
    for start in range(0, blocks.shape[0], CHUNK):
        out[start : start + CHUNK] = kernel(blocks[start : start + CHUNK])
    return out.reshape(shape)
