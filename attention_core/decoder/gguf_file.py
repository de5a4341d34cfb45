"""A small reader of the GGUF file layout: metadata, tensor directory, and the tensors' bytes.

The layout (little-endian, version 2 or 3), as documented in ggml's ``docs/gguf.md``:

    "GGUF" | version u32 | tensor_count u64 | kv_count u64
    kv_count × (key: string, value_type u32, value)          string = length u64 + UTF-8 bytes
    tensor_count × (name: string, n_dims u32, dims u64 × n_dims, ggml_type u32, offset u64)
    padding to ``general.alignment`` (default 32), then the tensor data; each offset counts from there

``dims`` lists the fastest-varying axis first, so a GGUF ``[640, 1024]`` is torch's ``(1024, 640)``.
The ``gguf`` package's ``GGUFReader`` parses the same thing but builds a numpy view per array
element, which takes 10–25 s on a 262,144-token vocabulary; this reader reads an array of strings
in one pass and an array of numbers with one ``numpy.frombuffer``.
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value types: fixed-size ones as numpy dtypes; 8 is a string, 9 an array.
_SCALAR = {
    0: np.dtype("<u1"), 1: np.dtype("<i1"), 2: np.dtype("<u2"), 3: np.dtype("<i2"), 4: np.dtype("<u4"),
    5: np.dtype("<i4"), 6: np.dtype("<f4"), 7: np.dtype("?"), 10: np.dtype("<u8"), 11: np.dtype("<i8"),
    12: np.dtype("<f8"),
}  # fmt: skip
_STRING, _ARRAY = 8, 9

# ggml tensor types this project reads: name, values per block, bytes per block.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    6: ("Q5_0", 32, 2 + 4 + 16),  # d (f16), the 32 high bits, 32 low nibbles
    8: ("Q8_0", 32, 2 + 32),  # d (f16), 32 int8
    12: ("Q4_K", 256, 2 + 2 + 12 + 128),  # d, dmin (f16), 8 packed 6-bit scales and mins, 256 nibbles
    14: ("Q6_K", 256, 128 + 64 + 16 + 2),  # low nibbles, high 2 bits, 16 int8 scales, d (f16)
}


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor lives: ``shape`` in torch order, ``offset`` from the file's start."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class GGUFFile:
    """A parsed GGUF file: its metadata (plain Python values; arrays of numbers as numpy arrays,
    arrays of strings as lists), its tensor directory, and a read-only memory map of its bytes."""

    path: str
    version: int
    metadata: dict[str, Any]
    tensors: dict[str, TensorInfo]
    data: np.ndarray  # uint8 view of the whole file (memory-mapped)

    def raw(self, name: str) -> np.ndarray:
        """The stored bytes of tensor ``name`` (uint8, no copy)."""
        info = self.tensor(name)
        return self.data[info.offset : info.offset + info.nbytes]

    def tensor(self, name: str) -> TensorInfo:
        if name not in self.tensors:
            raise ValueError(f"the GGUF file {self.path} has no tensor {name!r}")
        return self.tensors[name]


class _Cursor:
    """Reads little-endian values from a buffer, front to back."""

    def __init__(self, buf: memoryview, path: str) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError(f"{self.path} ends early: it is not a complete GGUF file")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def string(self) -> str:
        return bytes(self.take(self.u64())).decode("utf-8", errors="surrogateescape")

    def value(self, kind: int) -> Any:
        if kind in _SCALAR:
            dt = _SCALAR[kind]
            return np.frombuffer(self.take(dt.itemsize), dt)[0].item()
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = self.u32(), self.u64()
            if item in _SCALAR:
                dt = _SCALAR[item]
                return np.frombuffer(self.take(dt.itemsize * count), dt).copy()
            if item == _STRING:
                return self.strings(count)
            return [self.value(item) for _ in range(count)]
        raise ValueError(f"{self.path}: unknown metadata value type {kind}")

    def strings(self, count: int) -> list[str]:
        # One bytes object and int.from_bytes per item: a few hundred ms for 262,144 strings.
        # The copy is bounded by a generous guess of the array's size, so the tensor data is never copied.
        guess = self.pos + 64 * count + (1 << 20)
        raw = bytes(self.buf[self.pos : guess])
        out, pos, frm = [], 0, int.from_bytes
        for _ in range(count):
            n = frm(raw[pos : pos + 8], "little")
            if pos + 8 + n > len(raw):
                if len(raw) == len(self.buf) - self.pos:
                    raise ValueError(f"{self.path} ends early: it is not a complete GGUF file")
                raw = bytes(self.buf[self.pos :])  # a vocabulary of very long strings: take the rest
            out.append(raw[pos + 8 : pos + 8 + n].decode("utf-8", errors="surrogateescape"))
            pos += 8 + n
        self.pos += pos
        return out


def read_gguf(path: str | Path) -> GGUFFile:
    """Parse the header of the GGUF file at ``path`` and map its bytes; tensors are read lazily."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no GGUF file at {path}")
    with path.open("rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    data = np.frombuffer(mm, dtype=np.uint8)
    cur = _Cursor(memoryview(mm), str(path))
    if bytes(cur.take(4)) != MAGIC:
        raise ValueError(f"{path} is not a GGUF file (its first bytes are not 'GGUF')")
    version = cur.u32()
    if version not in (2, 3):
        raise ValueError(f"{path} is GGUF version {version}; this reader knows versions 2 and 3")
    n_tensors, n_kv = cur.u64(), cur.u64()
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.u32())
    infos = []
    for _ in range(n_tensors):
        name = cur.string()
        dims = [cur.u64() for _ in range(cur.u32())]
        kind, offset = cur.u32(), cur.u64()
        infos.append((name, tuple(reversed(dims)), kind, offset))
    align = int(metadata.get("general.alignment", DEFAULT_ALIGNMENT))
    start = -(-cur.pos // align) * align
    tensors = {}
    for name, shape, kind, offset in infos:
        if kind not in GGML_TYPES:
            raise ValueError(f"{path}: tensor {name} has ggml type {kind}, which this reader does not know")
        _, per_block, block_bytes = GGML_TYPES[kind]
        count = math.prod(shape)
        if shape[-1] % per_block:
            raise ValueError(f"{path}: tensor {name}'s rows are not whole blocks")
        nbytes = count // per_block * block_bytes
        if start + offset + nbytes > len(data):
            raise ValueError(f"{path} ends before tensor {name}'s data: the file is truncated")
        tensors[name] = TensorInfo(name, shape, kind, start + offset, nbytes)
    return GGUFFile(str(path), version, metadata, tensors, data)
