"""Sparse attention patterns as tiny pure mask functions, in attention-gym's style.

A pattern is a ``mask_mod(b, h, q_idx, kv_idx) -> bool`` tensor: ``True`` where query
``q_idx`` may attend to key ``kv_idx`` (torch SDPA's convention). The same function builds

- the dense ``(n_q, n_k)`` boolean mask of the reference paths (:func:`dense_mask`),
- the tile-level picture and the share of the n² work a block-sparse kernel skips
  (:func:`block_summary`), and
- FlexAttention's ``BlockMask`` (:mod:`.flex`).

A builder checks its arguments and keeps them in the closure as 0-d tensors, not Python ints:
``torch.compile`` lifts a captured tensor into an input of the graph, so a new window reuses
the compiled kernel, while a captured int is a constant baked into it (one compile per value).
The tensors are 0-d and on the CPU, which torch treats as scalars beside tensors of any device.

Builders are cached (``functools.lru_cache``): ``sliding_window(256)`` returns the same
function object each time, so the caches of block masks and compiled kernels, keyed on the
function, hit across a page's reruns.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..device import new_tensor_device
from ..validation import check_int, check_ints

MaskMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

FLEX_BLOCK = 128  # FlexAttention's default tile: sequences are padded to a multiple of it
MAX_SIDE = 1 << 20  # a guard against typos that would allocate terabytes
_CHUNK_ELEMENTS = 1 << 22  # mask entries evaluated at once: bounds the int64 temporaries to 32 MiB

EMPTY, PARTIAL, FULL = 0, 1, 2  # tile states in BlockSummary.states


def _scalar(value: int) -> torch.Tensor:
    """A pattern parameter as a 0-d CPU tensor (see the module docstring for why not an int)."""
    return torch.tensor(value, dtype=torch.long, device="cpu")


def _cached(builder: Callable[..., MaskMod]) -> Callable[..., MaskMod]:
    """Cache a pattern builder (module docstring). ``typed=True`` keeps ``True`` apart from ``1`` (the checks
    reject a bool); unhashable arguments skip the cache and reach the checks, which say what is wrong."""
    cached = functools.lru_cache(maxsize=256, typed=True)(builder)

    @functools.wraps(builder)
    def build(*args: object, **kwargs: object) -> MaskMod:
        try:
            hash((args, tuple(kwargs.items())))
        except TypeError:
            return builder(*args, **kwargs)
        return cached(*args, **kwargs)

    build.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return build


# ---- the patterns -------------------------------------------------------------------------


@_cached
def sliding_window(window: int) -> MaskMod:
    """Longformer's local attention: query ``i`` sees keys ``j`` with ``|i − j| ≤ window``."""
    w = _scalar(check_int("window", window, low=1, high=MAX_SIDE))

    def sliding_window_mask(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor):
        return (q_idx - kv_idx).abs() <= w

    return sliding_window_mask


@_cached
def window_with_globals(window: int, n_global: int) -> MaskMod:
    """The sliding window plus the first ``n_global`` tokens, which see every key and are seen by
    every query (Longformer's global attention on, e.g., [CLS])."""
    w = _scalar(check_int("window", window, low=1, high=MAX_SIDE))
    g = _scalar(check_int("n_global", n_global, low=0, high=MAX_SIDE))

    def window_with_globals_mask(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor):
        return ((q_idx - kv_idx).abs() <= w) | (q_idx < g) | (kv_idx < g)

    return window_with_globals_mask


@_cached
def dilated_window(window: int, dilation: int) -> MaskMod:
    """Longformer's dilated window: ``window`` keys on each side, ``dilation`` tokens apart, so the
    reach is ``window · dilation`` for the cost of ``window``. ``dilation = 1`` is
    :func:`sliding_window`."""
    w, d = check_ints(window=window, dilation=dilation, low=1, high=MAX_SIDE)
    reach, step = _scalar(w * d), _scalar(d)

    def dilated_window_mask(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor):
        distance = (q_idx - kv_idx).abs()
        return (distance <= reach) & (distance % step == 0)

    return dilated_window_mask


@_cached
def causal() -> MaskMod:
    """Query ``i`` sees keys ``0..i``: top-left aligned, as torch's ``is_causal``."""

    def causal_mask(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor):
        return q_idx >= kv_idx

    return causal_mask


def bigbird(
    window: int,
    n_global: int,
    n_random: int,
    block: int,
    seed: int,
    *,
    n: int,
    device: str | torch.device | None = None,
) -> MaskMod:
    """BigBird's block-sparse pattern (Zaheer et al. 2020) for sequences of up to ``n`` tokens.

    The sequence is cut into blocks of ``block`` tokens and every part of the pattern is whole
    blocks, which is what lets a block-sparse kernel skip the rest:

    - window: query block ``i`` sees key blocks ``i − window … i + window``;
    - global: the first ``n_global`` blocks see every key and are seen by every query;
    - random: each query block also sees ``n_random`` key blocks drawn from the others (those with
      real keys, neither in its window nor global), the same ones for the same ``seed``.

    ``block`` must divide the padded length (``n`` rounded up to a multiple of the 128-token
    tile), so BigBird's blocks tile FlexAttention's. The random choice lives in a small
    ``(blocks, blocks)`` table on ``device`` (default: torch's default device; used elsewhere, it
    is copied per call); the pattern refuses a longer sequence. Units: ``window`` and
    ``n_global`` count blocks, not tokens.
    """
    n, window, block = check_ints(n=n, window=window, block=block, low=1, high=MAX_SIDE)
    n_global, n_random = check_ints(n_global=n_global, n_random=n_random, low=0, high=MAX_SIDE)
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    padded = math.ceil(n / FLEX_BLOCK) * FLEX_BLOCK  # the length FlexAttention works on
    if padded % block:
        divisors = [b for b in (16, 32, 64, 128, 256, 512) if padded % b == 0]
        raise ValueError(
            f"block = {block} does not divide the padded length {padded} (n = {n} rounded up to a multiple of "
            f"{FLEX_BLOCK}); choose a block that divides it, e.g. {', '.join(map(str, divisors))}"
        )
    return _bigbird(window, n_global, n_random, block, seed, padded, n, new_tensor_device(device))


@_cached
def _bigbird(
    window: int, n_global: int, n_random: int, block: int, seed: int, padded: int, n: int, device: torch.device
) -> MaskMod:
    blocks = padded // block
    real = math.ceil(n / block)  # blocks that hold real keys; padding is never a random choice
    i = torch.arange(blocks)
    table = ((i[:, None] - i[None, :]).abs() <= window) | (i[:, None] < n_global) | (i[None, :] < n_global)
    gen = torch.Generator(device="cpu").manual_seed(seed)  # drawn on the CPU: one pattern per seed on every device
    for row in range(n_global, min(real, blocks)):  # a global block already sees every key block
        candidates = (~table[row, :real]).nonzero().flatten()  # (c,)
        picks = candidates[torch.randperm(len(candidates), generator=gen)[:n_random]]
        table[row, picks] = True
    table = table.to(device)  # (blocks, blocks)
    size = _scalar(block)

    def bigbird_mask(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor):
        rows, cols = (q_idx // size).long(), (kv_idx // size).long()  # int64 indices: torch's indexing is fastest
        return table.to(q_idx.device)[rows, cols]  # .to: a no-op on the table's own device

    bigbird_mask.max_length = padded  # type: ignore[attr-defined]  # the table covers this many tokens
    return bigbird_mask


def _combination(
    mask_mods: tuple[MaskMod, ...], op: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], what: str
) -> MaskMod:
    if not mask_mods:
        raise ValueError(f"{what} needs at least one mask function")
    for i, m in enumerate(mask_mods):
        if not callable(m):
            raise ValueError(f"{what}: argument {i} must be a mask function (b, h, q_idx, kv_idx) -> bool, got {m!r}")

    def combined_mask(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor):
        allowed = mask_mods[0](b, h, q_idx, kv_idx)
        for m in mask_mods[1:]:
            allowed = op(allowed, m(b, h, q_idx, kv_idx))
        return allowed

    lengths = [length for m in mask_mods if (length := getattr(m, "max_length", None)) is not None]
    if lengths:  # the shortest sequence any of them was built for
        combined_mask.max_length = min(lengths)  # type: ignore[attr-defined]
    return combined_mask


@_cached
def and_masks(*mask_mods: MaskMod) -> MaskMod:
    """Where every one of ``mask_mods`` allows (e.g. a window made causal)."""
    return _combination(mask_mods, torch.logical_and, "and_masks")


@_cached
def or_masks(*mask_mods: MaskMod) -> MaskMod:
    """Where any one of ``mask_mods`` allows."""
    return _combination(mask_mods, torch.logical_or, "or_masks")


# ---- evaluating a pattern -----------------------------------------------------------------


def check_pattern(mask_mod: object, n_q: int, n_k: int) -> tuple[int, int]:
    """Check a mask function and the sizes it is asked for; return ``(n_q, n_k)``."""
    if not callable(mask_mod):
        raise ValueError(f"mask_mod must be a function (b, h, q_idx, kv_idx) -> bool tensor, got {mask_mod!r}")
    n_q, n_k = check_ints(n_q=n_q, n_k=n_k, low=1, high=MAX_SIDE)
    length = getattr(mask_mod, "max_length", None)  # set by bigbird (and combinations of it)
    if length is not None and max(n_q, n_k) > length:
        raise ValueError(
            f"this pattern was built for sequences of up to {length} tokens, not {max(n_q, n_k)}: "
            "build it again with the new length (bigbird's n=...)"
        )
    return n_q, n_k


def _rows(mask_mod: MaskMod, start: int, stop: int, n_k: int, device: torch.device) -> torch.Tensor:
    """The pattern for queries ``start..stop−1`` against every key: ``(stop − start, n_k)`` bool."""
    # int32, as FlexAttention passes them: half the memory traffic of int64 (n ≤ MAX_SIDE fits)
    q_idx = torch.arange(start, stop, dtype=torch.int32, device=device)[:, None]  # (rows, 1)
    kv_idx = torch.arange(n_k, dtype=torch.int32, device=device)[None, :]  # (1, n_k)
    zero = torch.zeros((), dtype=torch.long, device=device)  # the patterns here ignore batch and head
    allowed = mask_mod(zero, zero, q_idx, kv_idx)
    if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool:
        got = allowed.dtype if isinstance(allowed, torch.Tensor) else type(allowed).__name__
        raise ValueError(f"mask_mod must return a bool tensor (True = may attend), got {got}")
    try:
        return torch.broadcast_to(allowed, (stop - start, n_k))  # a pattern may ignore q_idx or kv_idx
    except RuntimeError:
        raise ValueError(
            f"mask_mod returned shape {tuple(allowed.shape)}; it must work elementwise on q_idx and kv_idx"
        ) from None


def dense_mask(mask_mod: MaskMod, n_q: int, n_k: int, *, device: str | torch.device | None = None) -> torch.Tensor:
    """The pattern as a dense ``(n_q, n_k)`` bool mask on ``device`` (default: torch's default device).

    Evaluated a band of query rows at a time, so the peak is the mask itself plus a few MiB.
    """
    n_q, n_k = check_pattern(mask_mod, n_q, n_k)
    dev = new_tensor_device(device)
    out = torch.empty(n_q, n_k, dtype=torch.bool, device=dev)  # (n_q, n_k)
    step = max(1, _CHUNK_ELEMENTS // n_k)
    for start in range(0, n_q, step):
        stop = min(start + step, n_q)
        out[start:stop] = _rows(mask_mod, start, stop, n_k, dev)
    return out


@dataclass(frozen=True)
class BlockSummary:
    """A pattern seen in ``block × block`` tiles, as a block-sparse kernel sees it.

    ``states`` is ``(ceil(n_q/block), ceil(n_k/block))`` int8: ``EMPTY`` (0, no query of the
    tile may see any key of it: the kernel skips the tile), ``PARTIAL`` (1, computed, then
    masked) or ``FULL`` (2, computed, no mask needed). Tiles on the ragged edge count their
    real entries only. ``allowed_share``: the share of the n_q·n_k (query, key) pairs the pattern
    allows, the work an ideal kernel does.
    """

    states: torch.Tensor
    allowed_share: float

    def share(self, state: int) -> float:
        """Share of the tiles in ``state``: for ``EMPTY``, of the padded n_q·n_k scores a block-sparse
        kernel never computes (FlexAttention's ``BlockMask.sparsity()`` / 100 at the same block size)."""
        return int((self.states == state).sum()) / self.states.numel()


def block_summary(
    mask_mod: MaskMod, n_q: int, n_k: int, *, block: int = FLEX_BLOCK, device: str | torch.device | None = None
) -> BlockSummary:
    """Which ``block × block`` tiles of the ``(n_q, n_k)`` pattern are empty, partial or full.

    Works a band of tile rows at a time: memory O(block · n_k), never n_q · n_k.
    """
    n_q, n_k = check_pattern(mask_mod, n_q, n_k)
    block = check_int("block", block, low=1, high=MAX_SIDE)
    dev = new_tensor_device(device)
    q_tiles, k_tiles = math.ceil(n_q / block), math.ceil(n_k / block)
    pad_k = k_tiles * block - n_k
    bands, allowed = [], 0
    tiles_per_band = max(1, _CHUNK_ELEMENTS // (block * n_k))
    for first in range(0, q_tiles, tiles_per_band):
        start, stop = first * block, min((first + tiles_per_band) * block, n_q)
        rows = _rows(mask_mod, start, stop, n_k, dev)  # (rows, n_k)
        allowed += int(rows.sum())
        pad_q = -(stop - start) % block  # up to a whole tile
        # Padding: False for "any" (no key there), True for "all" (nothing there to block).
        grid_any = torch.nn.functional.pad(rows, (0, pad_k, 0, pad_q), value=False)  # (rows', n_k')
        grid_all = torch.nn.functional.pad(rows, (0, pad_k, 0, pad_q), value=True)  # (rows', n_k')
        shape = (grid_any.shape[0] // block, block, k_tiles, block)
        some = grid_any.view(shape).any(dim=3).any(dim=1)  # (tiles, k_tiles)
        every = grid_all.view(shape).all(dim=3).all(dim=1)  # (tiles, k_tiles)
        bands.append(torch.where(every, FULL, torch.where(some, PARTIAL, EMPTY)))
    states = torch.cat(bands).to(torch.int8)  # (q_tiles, k_tiles)
    return BlockSummary(states, allowed / (n_q * n_k))
