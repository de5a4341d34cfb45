"""The view's link: what ``bind="query-params"`` (the link seeds each control; a change is written back; a
default drops out; an invalid value is discarded) does not do by itself. Streamlit drops a value it cannot use
without a word: a notice names it (:func:`remember`, :func:`report`), so a presenter knows the bookmark was off.
Links once wrote on/off as ``1``/``0``, lists with commas and choices by their code (``mask=causal``):
:func:`upgrade` rewrites such a value on the session's first run and reruns once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

Upgrade = Mapping[str, str] | Callable[[str], str | list[str] | None]
_OPENED = "_link_opened"  # the link's values not yet judged: {key: [values]}
_SETTLED = "_link_settled"  # set once a run has finished: later runs never rewrite the link
_FORMS = "_link_forms"  # {key: its old form's upgrade}: also how the link writes a labelled choice


def on_off(old: str) -> str | None:
    """An on/off value in any form links have used (1/0, yes/no, on/off, true/false) as a toggle's "true"/"false"."""
    low = old.lower()
    return "true" if low in ("1", "yes", "on", "true") else "false" if low in ("0", "no", "off", "false") else None


def upgrade(**old_forms: Upgrade) -> None:
    """Rewrite values of an older link in today's form, once per session, and rerun; call before the widgets named.

    A mapping translates old values (others are left alone); a function returns the new value, or ``None``. The
    forms are kept: they also tell the label the link writes for a choice (:func:`_url_form`).
    """
    forms = {key: form.get if isinstance(form, Mapping) else form for key, form in old_forms.items()}
    st.session_state.setdefault(_FORMS, {}).update(forms)
    if _SETTLED in st.session_state:
        return
    new: dict[str, str | list[str]] = {}
    for key, form in forms.items():
        values = st.query_params.get_all(key)  # a repeated parameter (a list) too: each value in today's form
        each = [form(v) or v for v in values]
        flat = [x for v in each for x in (v if isinstance(v, list) else [v])]
        if flat != values:
            new[key] = flat
    rewrite(new)


def rewrite(values: dict[str, str | list[str]]) -> None:
    """On the session's first run, before the widgets named: put ``values`` in the link and rerun, so that
    the widgets are seeded from them (and the notices judge them, not what they replace)."""
    if values and _SETTLED not in st.session_state:
        st.query_params.update(values)
        opened = st.session_state.setdefault(_OPENED, {})
        opened.update({k: v if isinstance(v, list) else [v] for k, v in values.items()})
        st.rerun()


def remember() -> None:
    """Keep the link's values until their widgets have been drawn (the frame calls this first)."""
    if _SETTLED not in st.session_state and _OPENED not in st.session_state:
        st.session_state[_OPENED] = {k: st.query_params.get_all(k) for k in st.query_params}


def report(box: DeltaGenerator) -> None:
    """After a run: name in ``box`` the link's values that a control drawn in this run did not take."""
    st.session_state[_SETTLED] = True
    opened: dict[str, list[str]] = st.session_state.get(_OPENED) or {}
    problems = []
    for key in [k for k in opened if k in st.session_state]:  # drawn now; the rest wait (a closed tab)
        asked = opened.pop(key)
        now = st.query_params.get_all(key)
        if now != asked and not (not now and asked == _url_form(key, st.session_state[key])):
            instead = f"“{_shown(', '.join(now))}” is used instead" if now else "its default is used"
            problems.append(f"{key} = “{_shown(', '.join(asked))}” is not a value this control offers; {instead}.")
    if problems:
        box.info(
            "This link asked for settings that could not be used:\n\n"
            + "\n".join(f"- {p}" for p in problems),
            icon=":material/link:",
        )


def _url_form(key: str, value: Any) -> list[str]:
    """How the URL writes ``value``, to tell a default (dropped from the URL) from a rejected value."""
    form = st.session_state.get(_FORMS, {}).get(key)
    out = []
    for v in value if isinstance(value, list | tuple) else [value]:
        label = form(str(v)) if form is not None else None
        if isinstance(label, str):  # a choice written by its label
            out.append(label)
        elif isinstance(v, bool):
            out.append(str(v).lower())
        elif isinstance(v, float) and v.is_integer():
            out.append(str(int(v)))
        else:
            out.append(str(v))
    return out


def _shown(text: str, limit: int = 40) -> str:
    """A value from the link made harmless to echo: printable, no markup, short."""
    text = re.sub(r"[^\w .,+\-:/=·()]", "?", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def link_box() -> None:
    """A copyable link to this view in the sidebar (the address bar may be hidden on a projector)."""
    query = urlencode([(k, v) for k in st.query_params for v in st.query_params.get_all(k)])
    with st.sidebar, st.popover("Link to this view", icon=":material/link:", width="stretch"):
        st.code((st.context.url or "") + (f"?{query}" if query else ""), language=None, wrap_lines=True)
        st.caption("Copy it with the button at the right of the box. Opening it restores this view.")
