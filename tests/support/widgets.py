"""Drive a page's widgets through AppTest, the way a viewer would: find them, list their edge values.

Used by the AppTest tests (``open_page``, through ``tests/conftest.py``), ``tests/test_fuzz_widgets.py``
(edge values and random combinations) and ``benchmarks/latency.py`` (rerun time after each change).

A widget is named by its key (every widget of this app has one; a keyless one falls back to
"type:label"). Choices are set by their on-screen label, as the browser sends them: AppTest takes a
label where it takes an option, as long as the widget's ``format_func`` raises on a label (the pages
name choices with ``NAMES.__getitem__``, never ``NAMES.get``).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamlit.proto.ButtonGroup_pb2 import ButtonGroup as ButtonGroupProto
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import (
    Block,
    Button,
    ButtonGroup,
    Checkbox,
    Multiselect,
    NumberInput,
    Radio,
    Selectbox,
    SelectSlider,
    Slider,
    Tab,
    TextInput,
    Toggle,
    Widget,
)

ROOT = Path(__file__).resolve().parents[2]

_PAGE = re.compile(r"st\.Page\(\s*\"(?P<script>[^\"]+)\"(?P<rest>[^)]*)\)")
_URL_PATH = re.compile(r"url_path\s*=\s*\"(?P<url>[^\"]*)\"")


def discover_pages() -> dict[str, tuple[str, str]]:
    """Each page of the app's navigation, read from ``app.py``: name → (script path, URL path).

    The name is the script's file stem ("walkthrough"); the default page's URL is "/".
    """
    pages: dict[str, tuple[str, str]] = {}
    for m in _PAGE.finditer((ROOT / "app.py").read_text("utf-8")):
        script, rest = m["script"], m["rest"]
        url = _URL_PATH.search(rest)
        path = "/" if "default=True" in rest.replace(" ", "") else "/" + (url["url"] if url else Path(script).stem)
        pages[Path(script).stem] = (script, path)
    return pages


# What a viewer types into a free-text box when trying to break it.
_HOSTILE_TEXT = ["", " ", "<script>alert(1)</script>", "nan", "-1e309", "x" * 500]


def open_page(name: str, query: dict[str, str] | None = None, *, timeout: float = 120) -> AppTest:
    """``app.py`` opened at page ``name`` ("walkthrough") by a link with ``query``, run once, as a browser would."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.query_params.update(query or {})
    script, url = discover_pages()[name]
    if url != "/":
        at.switch_page(script)
    return at.run()


class TabGroup:
    """Keyed ``st.tabs(..., key=..., bind="query-params", on_change="rerun")``: the open tab is a value.

    AppTest shows the tabs as blocks and sends no state for them, and it sends its query string with
    every run, so a tab the link names wins over one set in session state: a choice sets both.
    """

    type = "tabs"
    proto = None  # never disabled

    def __init__(self, at: AppTest, block: Block) -> None:
        self.at = at
        self.key: str = block.key or ""
        self.options = [c.label for c in block.children.values() if isinstance(c, Tab)]
        self.label = "tabs"

    @property
    def value(self) -> str:
        return str(self.at.session_state[self.key])

    def select(self, label: str) -> None:
        self.at.query_params[self.key] = label
        self.at.session_state[self.key] = label


Control = Widget | TabGroup


def widget_name(w: Control) -> str:
    return w.key or f"{w.type}:{getattr(w, 'label', '?')}"


def widgets(at: AppTest) -> dict[str, Control]:
    """Every widget on screen (main area and sidebar, keyed tab groups too), by name, in page order."""
    found: dict[str, Control] = {}
    for root in (at.sidebar, at.main):
        for node in root:
            if isinstance(node, Widget):
                found.setdefault(widget_name(node), node)
            elif isinstance(node, Block) and node.type == "tab_container" and node.key:
                found.setdefault(node.key, TabGroup(at, node))
    return found


def walk_nodes(block: Block) -> Iterator[tuple[Any, Block]]:
    """Every node with the block that holds it (for "is there an explanation next to it?")."""
    for child in block.children.values():
        yield child, block
        if isinstance(child, Block):
            yield from walk_nodes(child)


# --------------------------------------------------------------------------------------------
# Setting values by on-screen label


def choose(w: Control, labels: list[str]) -> None:
    """Select option(s) of a selectbox, radio, multiselect, pills/segmented control, select_slider or tabs,
    by their on-screen labels (AppTest's public ``set_value`` takes a label where it takes an option)."""
    if isinstance(w, TabGroup):
        w.select(labels[0])
    elif isinstance(w, Selectbox):
        w.select_index(w.options.index(labels[0]))
    elif is_multi(w):
        w.set_value(list(labels))
    else:  # Radio, single-select ButtonGroup and SelectSlider
        w.set_value(labels[0])


def options(w: Control) -> list[str]:
    return list(getattr(w, "options", []) or [])


def is_multi(w: Control) -> bool:
    if isinstance(w, Multiselect):
        return True
    if isinstance(w, ButtonGroup):  # the proto says how clicks select (the public part of the element)
        return w.proto.click_mode != ButtonGroupProto.ClickMode.SINGLE_SELECT
    return False


def selected_labels(w: Control) -> list[str]:
    """The labels currently chosen, as the browser would show them."""
    if isinstance(w, TabGroup):
        return [w.value]
    if isinstance(w, Selectbox | Radio):
        return [] if w.index is None else [w.options[w.index]]
    if isinstance(w, ButtonGroup):
        return list(w.formatted_values)
    if isinstance(w, Multiselect):
        return list(w.values)
    if isinstance(w, SelectSlider):
        fmt = w.format_func
        v = w.value
        vs = list(v) if isinstance(v, list | tuple) else [v]
        return [str(fmt(x)) for x in vs]
    return []


# --------------------------------------------------------------------------------------------
# Moves: one change a viewer can make to one widget


@dataclass(frozen=True)
class Move:
    widget: str  # widget_name
    what: str  # a readable description, for failure messages and the latency table
    apply: Callable[[Control], None]

    def __str__(self) -> str:
        return f"{self.widget} ← {self.what}"


def _set(value: Any) -> Callable[[Control], None]:
    return lambda w: w.set_value(value)


def _choose(labels: list[str]) -> Callable[[Control], None]:
    return lambda w: choose(w, labels)


def _click(w: Control) -> None:
    w.click()  # type: ignore[attr-defined]


def _slider_bounds(w: Slider) -> tuple[Any, Any, bool]:
    value = w.value
    ranged = isinstance(value, list | tuple)
    lo, hi = w.min, w.max
    if isinstance(value if not ranged else value[0], int) and not isinstance(value, bool):
        lo, hi = int(lo), int(hi)
    return lo, hi, ranged


def edge_moves(w: Control) -> list[Move]:
    """The edge values of one widget: min and max (sliders), each option (choices, tabs), on and off, a click."""
    name = widget_name(w)
    if isinstance(w, Button):
        return [Move(name, "click", _click)]
    if isinstance(w, Toggle | Checkbox):
        return [Move(name, "on", _set(True)), Move(name, "off", _set(False))]
    if isinstance(w, Slider):
        lo, hi, ranged = _slider_bounds(w)
        if ranged:
            return [Move(name, f"[{lo}, {hi}]", _set([lo, hi])), Move(name, f"[{lo}, {lo}]", _set([lo, lo])),
                    Move(name, f"[{hi}, {hi}]", _set([hi, hi]))]  # fmt: skip
        return [Move(name, f"min {lo}", _set(lo)), Move(name, f"max {hi}", _set(hi))]
    if isinstance(w, NumberInput):
        value = w.value if w.value is not None else 0
        lo = w.min if w.min is not None else value - 10**6
        hi = w.max if w.max is not None else value + 10**6
        if isinstance(value, int):
            lo, hi = int(lo), int(hi)
        return [Move(name, f"min {lo}", _set(lo)), Move(name, f"max {hi}", _set(hi))]
    if isinstance(w, TextInput):
        return [Move(name, repr(t[:20]), _set(t)) for t in _HOSTILE_TEXT]
    opts = options(w)
    if isinstance(w, SelectSlider):  # a slider: its two ends
        return [Move(name, repr(o), _choose([o])) for o in dict.fromkeys([opts[0], opts[-1]])]
    if is_multi(w):
        moves = [Move(name, repr(o), _choose([o])) for o in opts]
        return [*moves, Move(name, "all", _choose(opts)), Move(name, "none", _choose([]))]
    if opts:  # selectbox, radio, single-select pills / segmented control
        return [Move(name, repr(o), _choose([o])) for o in opts]
    return []


def _slider_point(w: Slider, lo: Any, hi: Any, rng: random.Random) -> Any:
    """A random value a viewer could drag to: on the slider's step grid."""
    if isinstance(lo, int):
        return rng.randint(lo, hi)
    step = float(w.step) if w.step else (hi - lo) / 100
    return round(lo + step * rng.randint(0, math.floor((hi - lo) / step + 1e-9)), 10)


def restore_move(w: Control) -> Move | None:
    """The move that puts ``w`` back to what it shows now (None for a button)."""
    name = widget_name(w)
    if isinstance(w, Button):
        return None
    if isinstance(w, Selectbox | Radio | ButtonGroup | Multiselect | SelectSlider | TabGroup):
        labels = selected_labels(w)
        return Move(name, f"back to {labels}", _choose(labels))
    value = w.value
    return Move(name, f"back to {value!r}", _set(list(value) if isinstance(value, tuple) else value))


def random_move(w: Control, rng: random.Random) -> Move | None:
    """One random value for ``w`` (anywhere in its range, any option or subset)."""
    name = widget_name(w)
    if isinstance(w, Slider):
        lo, hi, ranged = _slider_bounds(w)
        a, b = sorted([_slider_point(w, lo, hi, rng), _slider_point(w, lo, hi, rng)])
        if ranged:
            return Move(name, f"[{a}, {b}]", _set([a, b]))
        return Move(name, f"{a}", _set(a))
    if isinstance(w, NumberInput):
        if w.min is None or w.max is None:
            return rng.choice(edge_moves(w))
        v = rng.randint(int(w.min), int(w.max)) if isinstance(w.value, int) else rng.uniform(w.min, w.max)
        return Move(name, f"{v}", _set(v))
    if is_multi(w):
        opts = options(w)
        chosen = [o for o in opts if rng.random() < 0.5]
        return Move(name, repr(chosen), _choose(chosen))
    moves = edge_moves(w)
    return rng.choice(moves) if moves else None


def apply(at: AppTest, move: Move) -> bool:
    """Apply ``move`` to the widget it names if it is on screen and enabled; False otherwise."""
    w = widgets(at).get(move.widget)
    if w is None or getattr(w.proto, "disabled", False):
        return False
    move.apply(w)
    return True
