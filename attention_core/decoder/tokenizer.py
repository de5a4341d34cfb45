"""Gemma's SentencePiece tokenizer, rebuilt from the GGUF metadata (no transformers, no sentencepiece).

The file stores the pieces (``tokenizer.ggml.tokens``), their types (1 normal, 3 control, 4
user-defined, 6 byte) and scores, but no merge list. Encoding a text:

1. control pieces (``<bos>``, ``<start_of_turn>``…) and user-defined ones (runs of newlines,
   ``[multimodal]``…) written in the text are kept whole, longest first;
2. in the rest, every space becomes ``▁`` (U+2581) and no space is prepended;
3. byte-pair merging: start from single characters (a character the vocabulary lacks becomes
   its UTF-8 bytes, ``<0xE2>``…) and repeatedly merge the adjacent pair whose joined piece is in the
   vocabulary and comes earliest in it (leftmost first on ties), until no pair joins;
4. ``<bos>`` goes in front.

Step 3's order is the vocabulary's order, not the stored scores: transformers builds its Gemma
tokenizer from a GGUF that way (Gemma's scores do not follow the merge order), and that is the
reference our tests compare with. Pieces made only of spaces are stored as spaces; they are looked
up as runs of ``▁``, as transformers does.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence

import numpy as np

from ..validation import check_int

SPACE = "\u2581"  # SentencePiece's visible space
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_BYTE_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


class GemmaTokenizer:
    """``encode(text) -> ids`` (``<bos>`` first), ``decode(ids) -> text``, ``token_strings(ids)``."""

    def __init__(self, pieces: Sequence[str], types: Sequence[int] | np.ndarray, *, bos_id: int, eos_id: int,
                 unk_id: int) -> None:  # fmt: skip
        if len(pieces) != len(types) or not len(pieces):
            raise ValueError("a tokenizer needs one type per piece and at least one piece")
        types = np.asarray(types)
        self.pieces = [SPACE * len(p) if p and not p.strip(" ") else p for p in pieces]  # "  " → "▁▁"
        self.bos_id, self.eos_id, self.unk_id = bos_id, eos_id, unk_id
        self.vocab_size = len(pieces)
        self._ids = {p: i for i, p in enumerate(self.pieces)}
        # Pieces kept whole where the text spells them: control ones, and user-defined ones that are not
        # runs of spaces (those were renamed to ▁ runs above and are reached by merging, as in the reference).
        kept = np.flatnonzero((types == CONTROL) | (types == USER_DEFINED)).tolist()
        whole = [i for i in kept if pieces[i].strip(" ")]
        self._special = {pieces[i]: i for i in whole}
        self._control = frozenset(np.flatnonzero(types == CONTROL).tolist())
        # Leftmost-longest matching of those pieces: jump to each character that starts one, then try
        # the lengths of the pieces starting with it, longest first (a regex alternation of 6,400
        # pieces would take a second to compile).
        lengths: dict[str, set[int]] = {}
        for p in self._special:
            lengths.setdefault(p[0], set()).add(len(p))
        self._lengths = {c: sorted(ls, reverse=True) for c, ls in lengths.items()}
        self._starts = re.compile("[" + "".join(re.escape(c) for c in lengths) + "]") if lengths else None
        self._byte_ids = [self._ids.get(f"<0x{b:02X}>", unk_id) for b in range(256)]
        self._byte_of = {i: b for b, i in enumerate(self._byte_ids) if _BYTE_PIECE.match(self.pieces[i])}

    # -- encoding ------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """The ids of ``text``, ``<bos>`` first. ``ValueError`` unless ``text`` is a string."""
        if not isinstance(text, str):
            raise ValueError(f"text must be a string, got {type(text).__name__}")
        ids = [self.bos_id]
        start = 0
        if self._starts is not None:
            for m in self._starts.finditer(text):
                i = m.start()
                if i < start:
                    continue  # inside the piece just matched
                for n in self._lengths[text[i]]:
                    found = self._special.get(text[i : i + n])
                    if found is not None:
                        ids += self._bpe(text[start:i])
                        ids.append(found)
                        start = i + n
                        break
        ids += self._bpe(text[start:])
        return ids

    def _bpe(self, text: str) -> list[int]:
        """Byte-pair merging of one stretch of plain text, by the vocabulary's order."""
        if not text:
            return []
        ids = self._ids
        symbols: list[str | None] = list(text.replace(" ", SPACE))
        n = len(symbols)
        nxt, prv = list(range(1, n + 1)), list(range(-1, n - 1))
        heap: list[tuple[int, int, int, str, str]] = []

        def push(i: int) -> None:  # queue the pair that starts at symbol i, if its join is a piece
            j = nxt[i] if i >= 0 else n
            if j < n:
                a, b = symbols[i], symbols[j]
                merged = ids.get(a + b)  # type: ignore[operator]
                if merged is not None:
                    heapq.heappush(heap, (merged, -len(a), i, a, b))  # type: ignore[arg-type]

        for i in range(n - 1):
            push(i)
        while heap:
            _, _, i, a, b = heapq.heappop(heap)
            j = nxt[i]
            if symbols[i] != a or j >= n or symbols[j] != b:
                continue  # stale: one side was merged since this pair was queued
            symbols[i], symbols[j] = a + b, None
            nxt[i] = nxt[j]
            if nxt[j] < n:
                prv[nxt[j]] = i
            push(prv[i])  # the new symbol's pairs with its neighbours
            push(i)
        out: list[int] = []
        i = 0
        while i < n:
            piece = symbols[i]
            found = ids.get(piece)  # type: ignore[arg-type]
            if found is not None:
                out.append(found)
            else:  # a character the vocabulary lacks: its UTF-8 bytes
                out += [self._byte_ids[b] for b in piece.encode("utf-8", errors="surrogateescape")]  # type: ignore[union-attr]
            i = nxt[i]
        return out

    # -- decoding ------------------------------------------------------------------------------------
    def _check_ids(self, ids: Sequence[int]) -> list[int]:
        return [check_int("token id", i, low=0, high=self.vocab_size - 1) for i in ids]

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """Each id's piece as a reader sees it: ``▁`` shown as a space; byte pieces stay ``<0xE2>``."""
        return [self.pieces[i].replace(SPACE, " ") for i in self._check_ids(ids)]

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``; control pieces (``<bos>``, ``<eos>``…) are left out, byte pieces joined
        into characters (an incomplete UTF-8 sequence becomes U+FFFD)."""
        out: list[str] = []
        pending = bytearray()
        for i in self._check_ids(ids):
            if i in self._byte_of:
                pending.append(self._byte_of[i])
                continue
            if pending:
                out.append(pending.decode("utf-8", errors="replace"))
                pending.clear()
            if i not in self._control:
                out.append(self.pieces[i].replace(SPACE, " "))
        if pending:
            out.append(pending.decode("utf-8", errors="replace"))
        return "".join(out)


def tokenizer_from_metadata(meta: dict) -> GemmaTokenizer:
    """The tokenizer a GGUF file's ``tokenizer.ggml.*`` metadata describes (SentencePiece, ``llama`` model)."""
    if meta.get("tokenizer.ggml.model") != "llama":
        raise ValueError(f"expected a SentencePiece ('llama') tokenizer, got {meta.get('tokenizer.ggml.model')!r}")
    return GemmaTokenizer(
        meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"],
        bos_id=int(meta.get("tokenizer.ggml.bos_token_id", 2)), eos_id=int(meta.get("tokenizer.ggml.eos_token_id", 1)),
        unk_id=int(meta.get("tokenizer.ggml.unknown_token_id", 3)),
    )  # fmt: skip
