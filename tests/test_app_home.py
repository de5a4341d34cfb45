"""AppTest of the home page and the shared frame."""

from __future__ import annotations

import ast
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def navigation_pages() -> dict[str, str]:
    """``{file: url_path}`` of every st.Page that app.py declares, read from its source."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    pages: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page":
            path = node.args[0].value  # type: ignore[attr-defined]
            url = next((k.value.value for k in node.keywords if k.arg == "url_path"), "")  # type: ignore[attr-defined]
            pages[path] = url
    return pages


def test_home_renders_formula_and_links_every_other_page() -> None:
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert "softmax" in at.latex[0].value
    linked = {link.proto.page for link in at.get("page_link")}
    others = {url for path, url in navigation_pages().items() if path != "pages/home.py"}
    assert others, "app.py declares no pages besides home"
    assert linked == others


def test_sidebar_shows_the_device_and_torch_version() -> None:
    import torch

    at = AppTest.from_file("../app.py", default_timeout=60).run()
    sidebar_text = " ".join(m.value for m in at.sidebar.markdown) + " ".join(c.value for c in at.sidebar.caption)
    from attention_core import default_device, device_info

    # Whatever the machine: the words follow the device the app computes on (ATTENTION_DEVICE included).
    info = device_info(default_device())
    expected = "CUDA GPU" if info.device.startswith("cuda") else "CPU"
    assert f"**Computing on:** {expected}" in sidebar_text
    assert info.name in sidebar_text
    assert torch.__version__ in sidebar_text


def test_every_navigation_page_renders_without_exception() -> None:
    for path in navigation_pages():
        at = AppTest.from_file("../app.py", default_timeout=120).run()
        at.switch_page(path).run()
        assert not at.exception, (path, at.exception)


def test_talk_mode_comes_from_the_link_and_stays_in_it() -> None:
    at = AppTest.from_file("../app.py", default_timeout=60)
    at.query_params["talk"] = "1"
    at.run()
    assert at.toggle(key="talk").value is True
    assert at.query_params.get("talk") in ("1", ["1"])
    at.toggle(key="talk").set_value(False).run()
    assert "talk" not in at.query_params
