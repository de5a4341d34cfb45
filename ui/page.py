"""The skeleton of a page with tabs, so each tabbed page is one call of :func:`tabbed_page`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from ui import draw
from ui.frame import talk


def heading(title: str, caption: str = "") -> None:
    """The page's title and a caption under it, both left out in talk mode, where the navigation names the page."""
    if not talk():
        st.title(title)
        if caption:
            st.caption(caption)


def example_or_own(examples: Mapping[str, str], own: str, picker: str, box: str) -> tuple[Callable[[], None], ...]:
    """The ``on_change`` callbacks of an example picker (key ``picker``) and of the text box it fills (key ``box``):
    choosing an example fills the box (``own`` leaves it as it is); typing in the box makes the choice ``own``."""
    state = st.session_state

    def picked() -> None:
        if state[picker] != own:
            state[box] = examples[state[picker]]

    def typed() -> None:
        if state[picker] != own and state[box] != examples[state[picker]]:
            state[picker] = own

    return picked, typed


def tabbed_page(
    tabs: Mapping[str, Callable[..., None]],
    *,
    key: str,
    title: str,
    intro: str = "",
    settings: Callable[[DeltaGenerator, str], Any] | None = None,
    summary: Callable[[Any, str], str] | None = None,
    popover: tuple[str, str] = ("Settings", ":material/tune:"),
) -> None:
    """A page of ``tabs`` (name → body), the open one named in the URL by ``key``: title, intro, shared settings,
    tabs, and the open tab's body, whose ``ValueError`` becomes a sentence in an error box.

    ``settings(box, open_tab)`` draws the controls the tabs share (in a bordered box; in talk mode in a popover
    labelled ``popover``, so the figures start high) and returns them, for each tab's body. It runs once the open
    tab is known, so it can disable what that tab does not read. ``summary(settings, open_tab)`` sums them up
    beside the folded popover in talk mode.
    """
    heading(title)
    draw.prose(intro)
    box, line = None, None
    if settings is not None and talk():
        top = st.columns([1, 4], vertical_alignment="center")
        box, line = top[0].popover(popover[0], icon=popover[1], width="stretch"), top[1]
    elif settings is not None:
        box = st.container(border=True)
    opened = st.tabs(list(tabs), key=key, bind="query-params", on_change="rerun")
    name, tab = next((name, tab) for name, tab in zip(tabs, opened, strict=True) if tab.open)
    args = ()
    if settings is not None:
        shared = settings(box, name)  # type: ignore[arg-type]
        if line is not None and summary is not None:
            line.markdown(summary(shared, name))
        args = (shared,)
    with tab:
        try:
            tabs[name](*args)
        except ValueError as exc:
            st.error(f"These settings cannot be computed: {exc}")
