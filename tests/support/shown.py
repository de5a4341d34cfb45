"""What a page shows, read from an AppTest after a run: its text, the link's notice, page links and charts.

Shared by the AppTest files, so each reads a page the same way.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from streamlit.testing.v1 import AppTest


def text_of(at: AppTest) -> str:
    """Every markdown, caption, warning, error and info box, one after another."""
    parts = [m.value for m in at.markdown] + [m.value for m in at.caption]
    parts += [w.value for w in at.warning] + [e.value for e in at.error] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def notice(at: AppTest) -> str:
    """The frame's note about a link's values that no control took ("" when there is none)."""
    return "\n".join(i.value for i in at.info if i.value.startswith("This link asked for"))


def page_links(at: AppTest) -> list[tuple[str, dict[str, list[str]]]]:
    """The main area's page links: (label, the query they carry)."""
    found = [el for el in at.main if getattr(el, "type", "") == "page_link"]
    return [(el.proto.label, parse_qs(el.proto.query_string)) for el in found]


def charts(at: AppTest) -> int:
    """How many plotly charts the main area holds."""
    return len([c for c in at.main if getattr(c, "type", "") == "plotly_chart"])
