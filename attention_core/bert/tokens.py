"""Text → WordPiece tokens with the model's own ``tokenizer.json`` (via the ``tokenizers`` library).

The file asks for truncation and padding to 128; both are switched off here, so a long text is
rejected with a message instead of being cut silently, and a batch is padded to its longest member.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence

from ..device import resolve_device

MAX_TOKENS = 128  # what the pages accept, [CLS] and [SEP] included
MAX_CHARS = 2000  # a guard before tokenising: 128 tokens never need more
CLS, SEP, PAD, UNK = "[CLS]", "[SEP]", "[PAD]", "[UNK]"


@dataclass(frozen=True)
class Tokens:
    """One text as the model reads it: ``ids`` and ``tokens`` include [CLS] first and [SEP] last; ``unknown`` lists
    the pieces of the text that the vocabulary lacks (each became [UNK])."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    unknown: tuple[str, ...]


@dataclass(frozen=True)
class Batch:
    """Several texts padded to one length. ``input_ids (B, L)`` long, ``attention_mask (B, L)`` bool
    (``True`` for real tokens), ``lengths`` the real length of each row."""

    items: tuple[Tokens, ...]
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    lengths: tuple[int, ...]


def load_tokenizer(folder: str | Path) -> Any:
    """The ``tokenizers.Tokenizer`` of ``folder/tokenizer.json``, without truncation or padding."""
    from tokenizers import Tokenizer  # lazy: only the model's pages need it

    tok = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def tokenize(tokenizer: Any, text: str) -> Tokens:
    """Tokenise one text; ``ValueError`` when it is empty, longer than :data:`MAX_TOKENS`, or nothing is left after
    cleaning."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("the text is empty: type a sentence")
    if len(text) > MAX_CHARS:
        raise ValueError(f"the text has {len(text)} characters; at most {MAX_CHARS} are accepted")
    enc = tokenizer.encode(text)
    ids, tokens = tuple(enc.ids), tuple(enc.tokens)
    if len(ids) > MAX_TOKENS:
        raise ValueError(
            f"the text is {len(ids)} tokens long ([CLS] and [SEP] included); at most {MAX_TOKENS} are accepted"
        )
    if len(ids) <= 2:
        raise ValueError("no token is left once the text is cleaned (control or invisible characters only)")
    unknown = tuple(text[a:b] for tok, (a, b) in zip(tokens, enc.offsets, strict=True) if tok == UNK)
    return Tokens(ids=ids, tokens=tokens, unknown=unknown)


def make_batch(
    tokenizer: Any, texts: Sequence[str], *, pad_id: int = 0, device: str | torch.device | None = None
) -> Batch:
    """Tokenise ``texts`` and pad them on the right to the longest, with ``pad_id``."""
    if isinstance(texts, str) or not isinstance(texts, Sequence) or len(texts) == 0:
        raise ValueError("texts must be a non-empty list of strings")
    items = tuple(tokenize(tokenizer, t) for t in texts)
    ids = pad_sequence([torch.tensor(it.ids) for it in items], batch_first=True, padding_value=pad_id)  # (B, L)
    lengths = tuple(len(it.ids) for it in items)
    mask = torch.arange(ids.shape[1]).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (1, L) < (B, 1) -> (B, L)
    dev = resolve_device(device)
    return Batch(items=items, input_ids=ids.to(dev), attention_mask=mask.to(dev), lengths=lengths)
