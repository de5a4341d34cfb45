"""FlexAttention with a block-sparse ``BlockMask``, compiled once per shape per process.

``torch.nn.attention.flex_attention`` run eagerly materialises the n × n scores (seconds at
n = 4096 on a CPU); under ``torch.compile`` it becomes a fused kernel that skips every empty
tile of the mask. Two things cost time once and are cached here (a planned call is the compiled kernel alone):

- **the compile**: one ``torch.compile(flex_attention, dynamic=True)`` per process. Dynamic
  shapes let one compiled kernel serve every sequence length, and the patterns keep their
  parameters as tensors (:mod:`.patterns`), so a new window or n does not recompile. What does
  recompile is a new kind of pattern, head count, head size, dtype or device: a *compile key*.
  The first call of a key takes seconds (≈ 20 s the first time on a 2-core CPU, a few seconds
  once inductor's on-disk cache is warm); :func:`flex_plan` reports it.
- **the block mask**: which 128 × 128 tiles are empty, partial or full (:func:`.patterns.block_summary`,
  never an n × n tensor), cached per (pattern, n_q, n_k, device), at most :data:`BLOCK_MASK_CACHE` of them.

Where it cannot compile (no C++ compiler for inductor, as on some Streamlit Community Cloud images, say),
:func:`flex_available` says why in a sentence and :func:`flex_plan` raises :class:`FlexUnavailable` with it.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import shutil
import sys
import threading
import time
import warnings
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import torch

from .patterns import EMPTY, FLEX_BLOCK, FULL, PARTIAL, BlockSummary, MaskMod, block_summary, check_pattern

NO_COMPILE_ENV = "ATTENTION_NO_COMPILE"
BLOCK_MASK_CACHE = 16  # block masks kept (each a few KiB: tile indices, not scores)
MAX_COMPILE_KEYS = 8  # compiled variants kept; dynamo's own limit per function is raised to match

_lock = threading.Lock()  # guards the compile keys and serialises compiles (two sessions, one compile)
_compiled_keys: dict[Hashable, float] = {}  # compile key -> seconds its first call took
_failed: dict[Hashable, str] = {}  # compile key (or device type) -> why it failed


class FlexUnavailable(RuntimeError):
    """FlexAttention cannot run compiled here; its message says why in a sentence."""


def flex_available(device: str | torch.device = "cpu") -> str | None:
    """``None`` when compiled FlexAttention can run on ``device``, else the reason it cannot (module docstring)."""
    dev = torch.device(device)
    if os.environ.get(NO_COMPILE_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return f"torch.compile is switched off here (${NO_COMPILE_ENV} is set)"
    if importlib.util.find_spec("torch.nn.attention.flex_attention") is None:
        return f"this torch ({torch.__version__}) has no FlexAttention; it needs torch 2.5 or later"
    if dev.type not in ("cpu", "cuda"):
        return f"FlexAttention is not set up here for {dev.type} devices"
    if dev.type == "cpu" and not _has_cpp_compiler():
        return "torch.compile needs a C++ compiler on the CPU (inductor builds C++ kernels) and none was found"
    if dev.type == "cuda" and importlib.util.find_spec("triton") is None:
        return "torch.compile needs Triton on a GPU and it is not installed"
    return _failed.get(dev.type)


def _has_cpp_compiler() -> bool:
    """Whether the C++ compiler inductor would use is on the PATH: its ``cpp.cxx`` candidates when inductor
    is loaded, else their default (``$CXX``, or g++; clang++ on macOS), without loading inductor (seconds on
    a small machine: a page can ask this on every rerun)."""
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        cxx = config.cpp.cxx
        candidates = tuple(cxx) if isinstance(cxx, (list, tuple)) else (cxx,)
    else:
        candidates = (os.environ.get("CXX", "clang++" if sys.platform == "darwin" else "g++"),)
    return any(name is not None and shutil.which(name) for name in candidates)


# ---- the block mask -----------------------------------------------------------------------


@dataclass(frozen=True)
class FlexBlockMask:
    """FlexAttention's ``BlockMask`` for a pattern and size, the tile summary it was built from, and
    the seconds the build took (a mask from the cache says its first build's)."""

    block_mask: Any
    summary: BlockSummary
    build_s: float


def flex_block_mask(mask_mod: MaskMod, n_q: int, n_k: int, *, device: str | torch.device = "cpu") -> FlexBlockMask:
    """FlexAttention's ``BlockMask`` for the pattern, from :func:`.patterns.block_summary` (cached); tiles on the
    ragged edge are never full, as with ``create_block_mask`` (it pads with blocked entries)."""
    n_q, n_k = check_pattern(mask_mod, n_q, n_k)
    return _block_mask(mask_mod, n_q, n_k, str(torch.device(device)))


@functools.lru_cache(maxsize=BLOCK_MASK_CACHE)
def _block_mask(mask_mod: MaskMod, n_q: int, n_k: int, device: str) -> FlexBlockMask:
    from torch.nn.attention.flex_attention import BlockMask

    started = time.perf_counter()
    summary = block_summary(mask_mod, n_q, n_k, device=device)
    states = summary.states  # (q_tiles, k_tiles)
    full = states == FULL
    if n_q % FLEX_BLOCK:
        full[-1, :] = False  # a ragged row of tiles is computed with the mask
    if n_k % FLEX_BLOCK:
        full[:, -1] = False
    partial = (states == PARTIAL) | ((states == FULL) & ~full)  # (q_tiles, k_tiles)

    def ordered(tiles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # Per row of tiles: how many to visit, and their column indices first (the kernel's layout).
        count = tiles.sum(dim=-1).to(torch.int32)  # (q_tiles,)
        cols = torch.argsort(tiles.to(torch.int32), dim=-1, descending=True, stable=True).to(torch.int32)
        return count[None, None].contiguous(), cols[None, None].contiguous()  # (1, 1, q_tiles), (1, 1, q, k)

    kv_num, kv_idx = ordered(partial)
    full_num, full_idx = ordered(full)
    built = BlockMask.from_kv_blocks(
        kv_num, kv_idx, full_num, full_idx, BLOCK_SIZE=FLEX_BLOCK, mask_mod=mask_mod, seq_lengths=(n_q, n_k)
    )
    return FlexBlockMask(built, summary, time.perf_counter() - started)


# ---- the compiled kernel ------------------------------------------------------------------


def _structure(fn: object) -> Hashable:
    """What dynamo specialises a pattern on: its code, the codes of the patterns it combines, and
    the kind (not the value) of each captured tensor. Captured ints count by value."""
    code = getattr(fn, "__code__", None)
    if code is None:  # a builtin such as torch.logical_and, or a callable object
        return ("callable", type(fn), getattr(fn, "__qualname__", None))
    parts: list[Hashable] = []
    for cell in getattr(fn, "__closure__", None) or ():
        value = cell.cell_contents
        if isinstance(value, torch.Tensor):
            parts.append(("tensor", value.dim(), value.dtype, value.device.type))
        elif callable(value):
            parts.append(_structure(value))
        elif isinstance(value, tuple) and all(callable(x) for x in value):
            parts.append(tuple(_structure(x) for x in value))
        else:
            parts.append(("value", repr(value)))
    return (code, tuple(parts))


@functools.cache
def _compiled() -> Callable[..., torch.Tensor]:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=True)


def _call(fn: Callable[..., torch.Tensor], *args: Any, **kwargs: Any) -> torch.Tensor:
    # Forward only (a grad-mode change would be a new compile), and room in dynamo's per-function
    # cache for every key we keep: past its default of 8 entries it would run flex eagerly, silently.
    import torch._dynamo  # loaded by torch.compile already; named here for the config

    with torch.no_grad(), torch._dynamo.config.patch(recompile_limit=MAX_COMPILE_KEYS + 4):
        return fn(*args, **kwargs)


@dataclass(frozen=True)
class FlexPlan:
    """A compiled FlexAttention call for one pattern and shape, ready to time or run: its block ``mask``,
    and ``compile_s``, the seconds of the first call of its compile key in this process (the compile and
    one run); ``compiled_now``: whether making this plan compiled."""

    mask: FlexBlockMask
    scale: float
    compile_s: float
    compiled_now: bool

    @property
    def sparsity(self) -> float:
        """Share of the tiles the kernel skips (0–1). (``BlockMask.sparsity()`` counts the padded
        tiles against n² and goes negative for an n that is not a multiple of the tile.)"""
        return self.mask.summary.share(EMPTY)

    def run(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The compiled kernel on ``(B, H, L, E)``, ``(B, H, S, E)``, ``(B, H, S, Ev)`` → ``(B, H, L, Ev)``."""
        return _call(_compiled(), q, k, v, block_mask=self.mask.block_mask, scale=self.scale)


def flex_plan(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask_mod: MaskMod, *, scale: float | None = None
) -> FlexPlan:
    """Build (or fetch) the block mask and compile (or reuse) the kernel for these 4-D inputs.

    Raises :class:`FlexUnavailable` with the reason when it cannot compile here; the inputs are
    assumed checked (:func:`.masked.masked_attention` checks them).
    """
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"FlexAttention takes (B, H, L, E) inputs; got q of shape {tuple(q.shape)}")
    reason = flex_available(q.device)
    if reason is not None:
        raise FlexUnavailable(reason)
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    built = flex_block_mask(mask_mod, q.shape[-2], k.shape[-2], device=q.device)
    key = (_structure(mask_mod), q.shape[0], q.shape[1], k.shape[1], q.shape[-1], v.shape[-1], q.dtype, q.device.type)
    if key in _compiled_keys:
        return FlexPlan(built, s, _compiled_keys[key], False)
    with _lock:  # one compile at a time; a second session waits for it, then reuses it
        if key in _compiled_keys:
            return FlexPlan(built, s, _compiled_keys[key], False)
        if key in _failed:
            raise FlexUnavailable(_failed[key])
        if len(_compiled_keys) >= MAX_COMPILE_KEYS:
            raise FlexUnavailable(
                f"this process has compiled FlexAttention for {MAX_COMPILE_KEYS} kinds of pattern and shape, "
                "its limit; restart it to compile another"
            )
        started = time.perf_counter()
        try:
            with warnings.catch_warnings():
                # The first compile imports torch.utils.mkldnn, which decorates with torch's own
                # deprecated torch.jit.script_method: torch's warning about torch, once per process.
                warnings.filterwarnings(
                    "ignore", message=r"`torch\.jit\.script_method` is deprecated", category=DeprecationWarning
                )
                _call(_compiled(), q, k, v, block_mask=built.block_mask, scale=s)
        except Exception as exc:  # inductor raises many types (compiler missing, lowering, codegen)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            why = f"torch.compile failed for FlexAttention ({type(exc).__name__}{': ' + first[:200] if first else ''})"
            _failed[key] = why
            if "InvalidCxxCompiler" in type(exc).__name__:
                _failed[q.device.type] = why  # no later key can compile either
            raise FlexUnavailable(why) from exc
        seconds = time.perf_counter() - started
        _compiled_keys[key] = seconds
    return FlexPlan(built, s, seconds, True)


def compiled_keys() -> int:
    """How many compile keys this process holds (at most :data:`MAX_COMPILE_KEYS`)."""
    return len(_compiled_keys)
