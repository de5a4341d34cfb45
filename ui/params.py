"""Typed URL parameters: parse untrusted query-string text into safe widget values.

Every parser returns ``(value, problem)``. ``value`` is always safe to use (clamped
into range, or the default); ``problem`` is a short sentence for the viewer when the
link asked for something that could not be honoured, else ``None``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_MAX_SHOWN = 40  # characters of a bad value echoed back to the viewer


def shown(raw: object) -> str:
    """A bad URL value made harmless to echo: printable, no markup, short."""
    text = re.sub(r"[^\w .,+\-:/=]", "?", str(raw))
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


@dataclass(frozen=True)
class IntParam:
    key: str
    default: int
    low: int
    high: int
    label: str = ""

    def parse(self, raw: str) -> tuple[int, str | None]:
        name = self.label or self.key
        try:
            value = int(float(raw.strip())) if re.fullmatch(r"\s*[-+]?\d+(\.0*)?\s*", raw) else None
        except (ValueError, OverflowError):
            value = None
        if value is None:
            return self.default, f"{name} = “{shown(raw)}” is not a whole number; using {self.default}."
        if value < self.low:
            return self.low, f"{name} = {shown(raw)} is below the smallest allowed, {self.low}; using {self.low}."
        if value > self.high:
            return self.high, f"{name} = {shown(raw)} is above the largest allowed, {self.high}; using {self.high}."
        return value, None

    def encode(self, value: Any) -> str:
        return str(int(value))


@dataclass(frozen=True)
class FloatParam:
    key: str
    default: float
    low: float
    high: float
    label: str = ""

    def parse(self, raw: str) -> tuple[float, str | None]:
        name = self.label or self.key
        try:
            value = float(raw.strip())
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            return self.default, f"{name} = “{shown(raw)}” is not a finite number; using {self.default:g}."
        if value < self.low:
            return self.low, f"{name} = {shown(raw)} is below the smallest allowed, {self.low:g}; using {self.low:g}."
        if value > self.high:
            return self.high, f"{name} = {shown(raw)} is above the largest allowed, {self.high:g}; using {self.high:g}."
        return value, None

    def encode(self, value: Any) -> str:
        return repr(float(value))  # shortest text that reads back to the same float


@dataclass(frozen=True)
class ChoiceParam:
    key: str
    default: str
    options: tuple[str, ...]
    label: str = ""

    def parse(self, raw: str) -> tuple[str, str | None]:
        if raw in self.options:
            return raw, None
        lowered = {o.lower(): o for o in self.options}
        if raw.strip().lower() in lowered:
            return lowered[raw.strip().lower()], None
        name = self.label or self.key
        return self.default, (
            f"{name} = “{shown(raw)}” is not one of {', '.join(self.options)}; using {self.default}."
        )

    def encode(self, value: Any) -> str:
        return str(value)


@dataclass(frozen=True)
class BoolParam:
    key: str
    default: bool
    label: str = ""

    def parse(self, raw: str) -> tuple[bool, str | None]:
        text = raw.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True, None
        if text in ("0", "false", "no", "off"):
            return False, None
        name = self.label or self.key
        return self.default, f"{name} = “{shown(raw)}” is not on/off (1 or 0); using {int(self.default)}."

    def encode(self, value: Any) -> str:
        return "1" if value else "0"


@dataclass(frozen=True)
class MultiChoiceParam:
    """A multiselect: comma-separated options in the URL, e.g. ``impl=naive,tiled``."""

    key: str
    default: tuple[str, ...]
    options: tuple[str, ...]
    label: str = ""
    min_items: int = 1

    def parse(self, raw: str) -> tuple[list[str], str | None]:
        items = [s.strip() for s in raw.split(",") if s.strip()]
        good = [s for s in dict.fromkeys(items) if s in self.options]
        bad = [s for s in items if s not in self.options]
        name = self.label or self.key
        if len(good) < self.min_items:
            return list(self.default), f"{name} = “{shown(raw)}” names no known option; using the default."
        if bad:
            return good, f"{name}: ignored unknown “{shown(','.join(bad))}”."
        return good, None

    def encode(self, value: Any) -> str:
        return ",".join(value)


@dataclass(frozen=True)
class TextParam:
    """Free text (a sentence): control characters are dropped and the length is capped."""

    key: str
    default: str
    max_chars: int = 500
    label: str = ""

    def parse(self, raw: str) -> tuple[str, str | None]:
        name = self.label or self.key
        text = "".join(ch for ch in raw if ch.isprintable())
        problem = None if text == raw else f"{name}: control characters were removed."
        if len(text) > self.max_chars:
            text = text[: self.max_chars]
            problem = f"{name} is longer than {self.max_chars} characters; only the first {self.max_chars} are used."
        return text, problem

    def encode(self, value: Any) -> str:
        return str(value)


Param = IntParam | FloatParam | ChoiceParam | BoolParam | MultiChoiceParam | TextParam


def parse_all(params: Sequence[Param], query: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Parse every known key of ``query``; unknown keys are ignored, missing ones get defaults."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for p in params:
        if p.key in query:
            value, problem = p.parse(str(query[p.key]))
            if problem:
                problems.append(problem)
        else:
            value = list(p.default) if isinstance(p, MultiChoiceParam) else p.default
        values[p.key] = value
    return values, problems


def encode_changed(params: Sequence[Param], values: dict[str, Any]) -> dict[str, str]:
    """The query string for ``values``: only keys that differ from their default."""
    out: dict[str, str] = {}
    for p in params:
        if p.key not in values:
            continue
        v = values[p.key]
        default = list(p.default) if isinstance(p, MultiChoiceParam) else p.default
        if (list(v) if isinstance(p, MultiChoiceParam) else v) != default:
            out[p.key] = p.encode(v)
    return out
