"""What a page shows in an AppTest run, read the same way by every page's tests: its sentences and headline
numbers, its charts and page links, and the frame's notice about a link's values that no control took."""

from __future__ import annotations

from urllib.parse import parse_qs

from streamlit.testing.v1 import AppTest

from tests.support.widgets import open_page


def opened(name: str, query: dict[str, str] | None = None) -> AppTest:
    """The page ``name`` run once from a link with ``query``; it raised nothing."""
    at = open_page(name, query)
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    """Each headline number by its label."""
    return {m.label: m.value for m in at.metric}


def notes(at: AppTest) -> dict[str, str]:
    """Each headline number's note (the text under it) by its label."""
    return {m.label: m.delta for m in at.metric}


def text(at: AppTest) -> str:
    """Every sentence on the page: markdown, captions, alerts, and each metric's label, value and note."""
    parts = [e.value for kind in ("markdown", "caption", "warning", "info", "error") for e in at.get(kind)]
    parts += [f"{m.label} {m.value} {m.delta}" for m in at.metric]
    return "\n".join(str(p) for p in parts)


def notice(at: AppTest) -> str:
    """The frame's note about a link's values that no control took ("" when there is none)."""
    return "\n".join(i.value for i in at.info if i.value.startswith("This link asked for"))


def charts(at: AppTest) -> list:
    """The main area's plotly charts (the frame may keep one in the sidebar)."""
    return [el for el in at.main if getattr(el, "type", "") == "plotly_chart"]


def page_links(at: AppTest) -> list[tuple[str, dict[str, list[str]]]]:
    """The main area's page links: (label, the query they carry)."""
    links = [el for el in at.main if getattr(el, "type", "") == "page_link"]
    return [(el.proto.label, parse_qs(el.proto.query_string)) for el in links]
