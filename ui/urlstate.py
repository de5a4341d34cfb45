"""Keep a page's controls in the URL, so a bookmark restores the exact view.

Use on a page, in this order:

    PARAMS = [IntParam("n", 6, 2, 16), ChoiceParam("mask", "none", MASKS), ...]
    urlstate.seed(PARAMS)            # before the widgets: URL → st.session_state
    st.slider("Tokens", 2, 16, key="n")   # widgets take key=, never value=/index=
    ...
    urlstate.publish(PARAMS)         # after the widgets: st.session_state → URL

``seed`` runs the URL through :mod:`ui.params`, so a bad link (``n=1e9``,
``mask=<script>``) is clamped or replaced by the default and explained in a
notice; unknown keys are dropped on ``publish``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from .params import BoolParam, MultiChoiceParam, Param, encode_changed

# Parameters of the shared frame (the sidebar), carried on every page's URL.
TALK = BoolParam("talk", False, label="talk mode")
FRAME_PARAMS: tuple[Param, ...] = (TALK,)

_NOTICES = "_url_notices"


def _raw(key: str) -> str | None:
    values = st.query_params.get_all(key)
    return values[-1] if values else None


def seed(params: Sequence[Param]) -> None:
    """Give each widget key its value from the URL the first time the page runs.

    A key already in ``st.session_state`` (the viewer has been using the page) is
    left alone. Problems with the link are kept for :func:`notices`.
    """
    _require_navigation()
    problems: list[str] = []
    for p in (*FRAME_PARAMS, *params):  # the frame's too, so a page run on its own still honours them
        if p.key in st.session_state:
            continue
        raw = _raw(p.key)
        if raw is None:
            value: Any = list(p.default) if isinstance(p, MultiChoiceParam) else p.default
        else:
            value, problem = p.parse(raw)
            if problem:
                problems.append(problem)
        st.session_state[p.key] = value
    if problems:
        st.session_state[_NOTICES] = problems


def _require_navigation() -> None:
    """Make sure the page runs inside ``app.py``'s ``st.navigation``, never on its own.

    Until some session has run ``app.py``, Streamlit treats a ``pages/`` folder the
    old way: a first visit to a fresh server at ``/walkthrough`` would run that file
    alone, without the frame or the page config. Seeing that, switch the server to
    ``st.navigation`` mode and rerun, which goes through ``app.py``.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def notices() -> None:
    """Show, once, what could not be taken from the link."""
    problems = st.session_state.pop(_NOTICES, None)
    if problems:
        st.info(
            "This link asked for settings that are out of range, so safe values are shown instead:\n\n"
            + "\n".join(f"- {p}" for p in problems),
            icon=":material/link:",
        )


def ensure_choice(key: str, options: Sequence[Any], default: Any | None = None) -> None:
    """Before a selectbox whose options depend on other controls: reset a stale value."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]


def clamp_int(key: str, low: int, high: int) -> None:
    """Before a slider whose range depends on other controls: clamp the stored value."""
    value = st.session_state.get(key, low)
    st.session_state[key] = min(max(int(value), low), high)


def publish(params: Sequence[Param]) -> None:
    """Write the page's current values (and the frame's) to the URL, defaults omitted."""
    everything = [*FRAME_PARAMS, *params]
    values = {p.key: st.session_state[p.key] for p in everything if p.key in st.session_state}
    wanted = encode_changed(everything, values)
    current = {k: st.query_params.get_all(k)[-1] for k in st.query_params}
    if current != wanted:
        st.query_params.from_dict(wanted)
    _link_box(wanted)


def view_link(query: dict[str, str]) -> str:
    """The address of this page with ``query``; relative when the browser's URL is unknown."""
    base = st.context.url or ""
    return base + ("?" + urlencode(query) if query else "")


def _link_box(query: dict[str, str]) -> None:
    with st.sidebar, st.popover("Link to this view", icon=":material/link:", width="stretch"):
        st.code(view_link(query), language=None, wrap_lines=True)
        st.caption("Copy it with the button at the right of the box. Opening it restores this view exactly.")


def talk_mode() -> bool:
    """Whether the presenter's talk mode is on (larger type, less prose)."""
    return bool(st.session_state.get(TALK.key, TALK.default))
