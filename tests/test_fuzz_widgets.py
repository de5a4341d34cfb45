"""Widget fuzz: every widget of every page through its edge values, then random combinations.

For each page of the navigation (read from ``app.py``, so a new page is fuzzed as soon as it lands):

1. **Edge walk.** Each enabled widget is set to each of its edge values: the two ends of a slider
   or select_slider, every option of a selectbox, radio or segmented control, every tab of a keyed
   ``st.tabs``, all/none/each option of a multiselect, on and off, a button click; then put back.
   When a move brings new widgets on screen (or enables them: "Random" enables the size sliders,
   a padding mask the length slider), those are walked at once, in that context, one level deep.
2. **Random combinations.** Seeded: 1 to 4 widgets changed at a time, until the page's share of the
   time budget (``FUZZ_SECONDS``, 60 s for all pages by default, edge walk included) is used; at
   least 3, at most 25 per widget.

After every rerun the page must show no exception, and no NaN or infinity that is not explained.

What counts as a shown NaN/inf, and as its explanation (the rule, stated once):
- A *shown value* is the lowercase token ``nan`` or ``inf`` (optionally signed) standing alone, as
  Python, numpy and torch print them (``f"{x:.3f}"`` gives "nan", "-inf"), in any text element
  (markdown, caption, text, alerts, headings, metric values), a table or dataframe cell (a ±inf
  float cell counts too; a NaN float does not, since Streamlit shows a missing number as "None"),
  or a plotly chart's cell text (trace ``text``, annotations).
  Code (``st.code``, and code spans in markdown) is exempt: ``float("-inf")`` there is the lesson.
  The symbol ∞ and prose spellings ("NaN", "infinity") are words, not shown values.
- It is *explained* when the same element (with the shown values themselves removed) or a
  neighbouring element — another element in the same block, or in the block around it — says
  why: it mentions overflow, NaN, "not a number", infinity/infinite, ∞ or undefined.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import (
    AlertBase,
    Block,
    Code,
    Dataframe,
    HeadingBase,
    Markdown,
    Metric,
    Table,
    Text,
    UnknownElement,
)

from tests.support.widgets import Move, apply, discover_pages, edge_moves, open_page, random_move, restore_move, widgets

PAGES = discover_pages()
BUDGET_S = float(os.environ.get("FUZZ_SECONDS", "60"))  # shared by the pages; the edge walk always completes
MIN_COMBOS = 3  # random combinations per page, however slow the page
COMBOS_PER_WIDGET = 25  # enough for a page with few widgets (home) before its time share is up
NESTED_DEPTH = 1
SEED = 20240607

# Where each page's fuzz starts (a URL query). The benchmark starts from a sweep of a few seconds, so
# the edge walk's click on Run (made with the other controls back at their start values) stays short.
START = {
    "benchmark": {"bm_impl": "sdpa,textbook", "bm_nmin": "128", "bm_nmax": "128", "bm_d": "16", "bm_heads": "1",
                  "bm_batch": "1", "bm_budget": "5"},
    "heads": {"hd_tmax": "2048", "hd_tdm": "64"},  # the decode tab's live timing at its smallest
    # Run measures linear beside SDPA at n = 128 (no FlexAttention: no compile of seconds).
    "efficient": {"ef_routes": "linear", "ef_nmin": "128", "ef_nmax": "128", "ef_budget": "5"},
    "decoder": {"dc_new": "2"},  # Write (clicked with the others at their start) writes two tokens
    "induction": {"in_steps": "200"},  # Train: 200 steps, a few seconds
}  # fmt: skip
# Never pressed in the random phase: Run with random settings could measure for minutes.
NOT_RANDOM = {"bm_run", "hd_measure", "ef_run", "in_train", "dc_write"}

_SHOWN = re.compile(r"(?<![A-Za-z_])[-+−]?(?:nan|inf)(?![A-Za-z_])")
_CUE = re.compile(r"overflow|nan|not a number|infinit|∞|\\infty|undefined", re.IGNORECASE)
_CODE = re.compile(r"```.*?```|`[^`]*`", re.DOTALL)


# --------------------------------------------------------------------------------------------
# Reading what the page shows


def _text_of(node: Any) -> str | None:
    """The prose an element shows (None for elements without prose)."""
    if isinstance(node, Code):
        return None
    if isinstance(node, Markdown):  # also caption, latex, divider
        return _CODE.sub(" ", node.value)
    if isinstance(node, AlertBase | HeadingBase | Text):
        return str(node.value)
    if isinstance(node, Metric):
        return f"{node.label} {node.value} {node.proto.delta}"
    return None


def _cells(node: Any) -> list[str]:
    """Shown values of a table, dataframe or chart, as text ("nan" for a non-finite float)."""
    if isinstance(node, Dataframe | Table):
        df = node.value
        if hasattr(df, "data"):  # a Styler
            df = df.data
        out: list[str] = []
        for col in df.columns:
            for v in df[col].tolist():
                if isinstance(v, float) and math.isinf(v):  # NaN is a missing value, shown as "None"
                    out.append(str(v))
                elif isinstance(v, str):
                    out.append(v)
        return out
    if isinstance(node, UnknownElement) and node.type == "plotly_chart":
        spec = json.loads(node.proto.spec)
        out = []
        for trace in spec.get("data", []):
            for key in ("text", "texttemplate"):
                out.extend(str(t) for t in _flatten(trace.get(key)))
        for ann in spec.get("layout", {}).get("annotations", []) or []:
            out.append(str(ann.get("text", "")))
        return out
    return []


def _flatten(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, list | tuple):
        return [y for item in x for y in _flatten(item)]
    if isinstance(x, dict):  # plotly's typed-array encoding has no text; ignore it
        return []
    return [x]


def unexplained_nan_inf(at: AppTest) -> list[str]:
    """Every shown NaN/inf value without an explanation next to it (see the module docstring)."""
    problems: list[str] = []

    def visit(block: Block, around: list[str]) -> None:
        texts = [t for c in block.children.values() if (t := _text_of(c)) is not None]
        here = around + texts
        for child in block.children.values():
            if isinstance(child, Block):
                visit(child, here)
                continue
            text = _text_of(child)
            shown = _SHOWN.findall(text) if text else []
            shown += [c for c in _cells(child) if _SHOWN.search(c)]
            if not shown:
                continue
            own = _SHOWN.sub(" ", text or "")
            neighbours = [_SHOWN.sub(" ", t) for t in here]
            if not any(_CUE.search(t) for t in [own, *neighbours]):
                snippet = (text or "; ".join(shown))[:160]
                problems.append(f"{type(child).__name__}: {snippet!r}")

    visit(at.main, [])
    visit(at.sidebar, [])
    return problems


def check(at: AppTest, page: str, history: list[Move]) -> None:
    where = f"{page} after {' → '.join(map(str, history[-6:])) or 'first load'}"
    assert not at.exception, f"exception on {where}: {[e.value for e in at.exception]}"
    bad = unexplained_nan_inf(at)
    assert not bad, f"unexplained NaN/inf on {where}: {bad}"


# --------------------------------------------------------------------------------------------
# The walk


def _enabled(at: AppTest) -> set[str]:
    return {name for name, w in widgets(at).items() if not getattr(w.proto, "disabled", False)}


def _run(at: AppTest, page: str, move: Move, history: list[Move]) -> bool:
    """Apply ``move`` if its widget is on screen and enabled, rerun, check. False if skipped."""
    if not apply(at, move):
        return False
    at.run()
    history.append(move)
    check(at, page, history)
    return True


def edge_walk(at: AppTest, page: str, names: list[str], history: list[Move], depth: int) -> int:
    """Walk each named widget through its edge values, then put it back as it was.

    Widgets that a move brings on screen (or enables) are walked at once, in that context.
    Returns the number of reruns done.
    """
    runs = 0
    for name in names:
        w = widgets(at).get(name)
        if w is None or getattr(w.proto, "disabled", False):
            continue  # hidden or disabled in the current context
        back = restore_move(w)
        for move in edge_moves(w):
            before = _enabled(at)
            if not _run(at, page, move, history):
                continue
            runs += 1
            new = [n for n in widgets(at) if n in _enabled(at) - before]
            if new and depth < NESTED_DEPTH:
                runs += edge_walk(at, page, new, history, depth + 1)
        if back is not None:
            runs += _run(at, page, back, history)
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("page", list(PAGES))
def test_widget_fuzz(page: str) -> None:
    start = time.monotonic()
    budget = BUDGET_S / len(PAGES)
    history: list[Move] = []
    at = open_page(page, START.get(page))
    check(at, page, history)

    runs = edge_walk(at, page, list(widgets(at)), history, depth=0)

    rng = random.Random(f"{SEED}-{page}")
    combos = 0
    while combos < MIN_COMBOS or time.monotonic() - start < budget:
        names = sorted(_enabled(at) - NOT_RANDOM)
        if not names or combos >= COMBOS_PER_WIDGET * len(names):
            break
        for name in rng.sample(names, k=min(len(names), rng.randint(1, 4))):
            move = random_move(widgets(at)[name], rng)
            if move is not None and apply(at, move):
                history.append(move)
        at.run()
        runs += 1
        combos += 1
        check(at, page, history)
    assert runs > 0 or not widgets(at), "the fuzz never changed a widget"


def test_the_nan_rule_flags_a_bare_nan_and_accepts_an_explained_one() -> None:
    """The checker itself: a bare "nan" is caught, the same value next to an explanation is not."""
    script = """
import streamlit as st
mode = st.session_state.get("mode", "bare")
if mode == "bare":
    st.markdown("max |Δ| = nan")
elif mode == "explained":
    st.markdown("max |Δ| = nan")
    st.caption("The scores overflowed float16, so the difference is not a number.")
elif mode == "table":
    st.dataframe({"ms": [1.0, float("inf")], "MiB": [2.0, float("nan")]})
else:
    st.code("x.masked_fill(~mask, float('-inf'))")
    st.latex(r"e^{-\\infty} = 0")
    st.markdown("Blocked keys get −∞ and an information-free weight.")
"""
    results = {}
    for mode in ("bare", "explained", "table", "clean"):
        at = AppTest.from_string(script)
        at.session_state["mode"] = mode
        at.run()
        results[mode] = unexplained_nan_inf(at)
    assert len(results["bare"]) == 1
    assert results["explained"] == []
    assert len(results["table"]) == 1
    assert results["clean"] == []


def test_pages_are_discovered_from_the_navigation() -> None:
    assert {"home", "walkthrough"} <= set(PAGES)
    assert PAGES["home"][1] == "/"
