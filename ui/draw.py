"""What every page draws with: charts (fitted to a projector in talk mode), prose, metric rows, tables.

Talk mode fits a page's main figure to the window with CSS alone (``height: min(natural, 100vh − the room
above it)``), so the browser sizes it on every resize with no round trip to Python. The room above each
fitted figure is in :data:`TALK_ABOVE`, read off screenshots at 1280×720 (``benchmarks/rehearsal.py``
flags a figure that no longer fits); figures are laid out for that, the smallest talk screen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from figures.style import PLOTLY_CONFIG

from .frame import talk

TALK_ABOVE = {  # px from the window's top to each fitted figure's top, talk mode at 1280×720 (a projector's 720p)
    "walkthrough.steps": 250, "walkthrough.steps-tall": 262, "walkthrough.all": 150, "walkthrough.compare": 140,
    "scaling.Variance": 440, "scaling.Saturation": 300, "scaling.Gradients": 300, "scaling.Scaling strategies": 395,
    "scaling.Initialisation": 352, "scaling.Numerical stability": 384, "scaling.Training": 385,
    "heads.Split": 250, "heads.Heads side by side": 330, "heads.MHA → GQA → MQA": 330,
    "heads.KV-cache calculator": 290, "heads.Decode": 370,
    "benchmark.result": 150,
    "efficient.Sparse patterns": 200, "efficient.Kernels & low rank": 200, "efficient.Accuracy": 200,
    "efficient.Cost": 150,
}  # fmt: skip
TALK_WIDTH = 1180  # its main column, sidebar collapsed: the width talk-mode figures are laid out for
NORMAL_WIDTH = 820  # the main column of a 1280-wide laptop with the sidebar open
NUMBER = st.column_config.NumberColumn


def room(fit: str, natural: int, low: int = 260) -> int:
    """The height a figure fitted as ``fit`` has on the smallest talk screen: lay it out for that."""
    return int(max(low, min(natural, 720 - TALK_ABOVE[fit] - 16)))


def chart(fig: go.Figure, key: str, *, fit: str | None = None, low: int = 260, **kwargs: Any) -> Any:
    """``st.plotly_chart`` with the project's config; in talk mode a figure with ``fit`` fills the window's rest."""
    kwargs.setdefault("config", PLOTLY_CONFIG)
    if fit is None or not talk():
        return st.plotly_chart(fig, width="stretch", key=key, **kwargs)
    natural = int(fig.layout.height or 450)
    box = f"fit-{key}"
    st.html(
        f"<style>.st-key-{box}{{flex:none!important;min-height:{low}px;"
        f"height:min({natural}px,calc(100vh - {TALK_ABOVE[fit]}px))!important}}</style>"
    )
    with st.container(key=box):
        return st.plotly_chart(fig, width="stretch", height="stretch", key=key, **kwargs)


def panels(figs: Sequence[go.Figure], keys: Sequence[str], fit: str | None = None) -> None:
    """Figures side by side in ``st.columns``, each fitted as ``fit`` in talk mode; on a phone the columns stack, so
    each panel keeps the full width."""
    for column, fig, key in zip(st.columns(len(figs)), figs, keys, strict=True):
        with column:
            chart(fig, key, fit=fit)


def figure(build: Callable[..., go.Figure], *args: Any) -> go.Figure:
    """``build(*args)``, built once per arguments (plain values) and kept as the object, never changed: building
    costs tens of ms, most of a rerun, and one restored from a pickle would be validated again at that cost."""
    return _figure(f"{build.__module__}.{build.__qualname__}", build, args)


@st.cache_resource(max_entries=512, show_spinner=False)
def _figure(name: str, _build: Callable[..., go.Figure], args: tuple[Any, ...]) -> go.Figure:
    return _build(*args)


def prose(*paragraphs: str) -> None:
    """Explanatory paragraphs: shown normally, left out in talk mode (the presenter says them)."""
    if not talk():
        for p in paragraphs:
            st.markdown(p)


def fmt(x: float, digits: int = 3) -> str:
    """A number for prose: ``digits`` significant digits, a true minus sign."""
    return f"{x:.{digits}g}".replace("-", "−")


def metrics(*items: tuple[str, str, str | None] | tuple[str, str, str | None, str], border: bool = False) -> None:
    """A row of headline numbers: (label, value, a note under it or None[, help shown on hover])."""
    for col, (label, value, note, *hint) in zip(st.columns(len(items)), items, strict=True):
        col.metric(label, value, note, delta_color="off", delta_arrow="off", border=border, help=next(iter(hint), None))


def numbers(rows: Any, columns: dict[str, Any], caption: str | None = None, *, key: str | None = None) -> None:
    """The numbers behind a figure in a closed expander; with ``key``, sent only while it is open (even closed,
    a table costs a cold page about half a second in the browser)."""
    box = st.expander("The numbers", key=key, on_change="rerun") if key else st.expander("The numbers")
    if key is None or box.open:
        with box:
            if caption:
                st.caption(caption)
            st.dataframe(rows[list(columns)], hide_index=True, width="stretch", column_config=columns)


def settings(*rows: int | Sequence[float], box: Any = None) -> list[list[Any]]:
    """Rows of columns for a tab's controls (in ``box`` when given); in talk mode they stack in one popover, so the
    figure starts high on a projector: ``box`` (a page's shared popover) or a "Settings" one. ``rows``: each row's
    column count or widths."""
    if talk():
        box = box or st.popover("Settings", icon=":material/tune:")
        return [[box] * (r if isinstance(r, int) else len(r)) for r in rows]
    return [(box or st).columns(r, vertical_alignment="bottom") for r in rows]
