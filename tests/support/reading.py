"""What an AppTest page says, read back for assertions: its sentences, its metrics, the frame's link notice."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def text(at: AppTest) -> str:
    """Every sentence on the page: markdown, captions and alerts."""
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "warning", "info", "error") for e in at.get(kind))


def metrics(at: AppTest) -> dict[str, str]:
    """Each metric's value by its label."""
    return {m.label: m.value for m in at.metric}


def notes(at: AppTest) -> dict[str, str]:
    """Each metric's note (the text under its number) by its label."""
    return {m.label: m.delta for m in at.metric}


def notice(at: AppTest) -> str:
    """The frame's note about a link's values that no control took ("" when there is none)."""
    return "\n".join(i.value for i in at.info if i.value.startswith("This link asked for"))
