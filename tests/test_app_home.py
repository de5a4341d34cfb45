"""AppTest of the home page and the shared frame."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.support.widgets import discover_pages


def test_home_renders_formula_and_links_every_other_page() -> None:
    at = AppTest.from_file("../app.py", default_timeout=60).run()
    assert not at.exception
    assert "softmax" in at.latex[0].value
    linked = {link.proto.page for link in at.get("page_link")}
    others = {url.lstrip("/") for _script, url in discover_pages().values() if url != "/"}
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
    for path, _url in discover_pages().values():
        at = AppTest.from_file("../app.py", default_timeout=120).run()
        at.switch_page(path).run()
        assert not at.exception, (path, at.exception)


def test_talk_mode_comes_from_the_link_and_stays_in_it() -> None:
    at = AppTest.from_file("../app.py", default_timeout=60)
    at.query_params["talk"] = "1"
    at.run()
    assert at.toggle(key="talk").value is True
    assert any("font-size: 1.3rem" in h.proto.body for h in at.get("html"))  # talk mode's larger type
    assert at.query_params.get("talk") in ("true", ["true"])  # an old talk=1 link is rewritten in today's form
    at.toggle(key="talk").set_value(False).run()  # the browser then drops it from the URL (tests/test_browser.py)
    assert at.toggle(key="talk").value is False and not any("font-size: 1.3rem" in h.proto.body for h in at.get("html"))
