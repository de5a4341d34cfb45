"""What a presenter sees, read from the browser's layout: used by the browser tests and by
``benchmarks/rehearsal.py``.

- :func:`heatmap_text_problems`: in every heatmap, no two cell numbers' boxes intersect, and each
  lies inside the plot area (a number cut by the plot's edge reads as another number).
- :func:`cut_off`: whether an element runs past the bottom (or top) of the window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

# Boxes are compared with this much slack (px): anti-aliasing makes touching glyph boxes overlap by a hair.
SLACK = 0.5

_TEXT_BOXES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((plot, i) => {
    const r = e => { const b = e.getBoundingClientRect(); return {x: b.left, y: b.top, w: b.width, h: b.height}; };
    const texts = Array.from(plot.querySelectorAll('g.heatmap-label text'))
        .filter(t => (t.textContent || '').trim() !== '')
        .map(t => ({text: t.textContent, ...r(t)}));
    const areas = Array.from(plot.querySelectorAll('.draglayer .nsewdrag')).map(r);
    return {index: i, texts, areas};
})"""


def _intersect(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] + SLACK < b["x"] + b["w"]
        and b["x"] + SLACK < a["x"] + a["w"]
        and a["y"] + SLACK < b["y"] + b["h"]
        and b["y"] + SLACK < a["y"] + a["h"]
    )


def _inside(t: dict[str, float], area: dict[str, float]) -> bool:
    return (
        t["x"] >= area["x"] - SLACK
        and t["y"] >= area["y"] - SLACK
        and t["x"] + t["w"] <= area["x"] + area["w"] + SLACK
        and t["y"] + t["h"] <= area["y"] + area["h"] + SLACK
    )


def heatmap_boxes(page: Page) -> list[dict[str, Any]]:
    """Per plotly figure on the page: its cell numbers' boxes and its plot areas (viewport px)."""
    return page.evaluate(_TEXT_BOXES)


def heatmap_text_problems(page: Page) -> list[str]:
    """Sentences describing every overlapping or clipped cell number; empty when all is well."""
    problems: list[str] = []
    for fig in heatmap_boxes(page):
        texts, areas = fig["texts"], fig["areas"]
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                if _intersect(a, b):
                    problems.append(f"figure {fig['index']}: “{a['text']}” overlaps “{b['text']}”")
            if areas and not any(_inside(a, area) for area in areas):
                problems.append(f"figure {fig['index']}: “{a['text']}” runs past the plot area")
    return problems


def cut_off(page: Page, element: Locator) -> str | None:
    """Why ``element`` is not wholly inside the window as it is scrolled now, or None if it is."""
    box = element.bounding_box()
    if box is None:
        return "not on the page"
    height = page.viewport_size["height"] if page.viewport_size else page.evaluate("window.innerHeight")
    if box["y"] < -1:
        return f"its top is {-box['y']:.0f} px above the window"
    bottom = box["y"] + box["height"]
    if bottom > height + 1:
        return f"its bottom is {bottom - height:.0f} px below the window ({bottom:.0f} > {height})"
    return None
