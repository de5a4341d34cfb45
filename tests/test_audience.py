"""A small audience against a real server: three viewers speak Streamlit's websocket protocol at once.

The large runs (10 to 100 viewers, with and without a memory limit) stay in ``benchmarks/audience.py``;
this checks that its driver still understands the app, so those numbers stay true: every viewer gets a
finished page with no error, and its listener's changes (the walkthrough's Next, a slider, the model's
sentence) rerun the page. No timing is asserted beyond generous timeouts.
"""

from __future__ import annotations

import asyncio
import random
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmarks.audience import Link, Viewer, Widget, _element_errors, _state_for_change, links, visit
from tests.support.browser import StreamlitServer


def _run(server: StreamlitServer, viewers: list[Viewer]) -> None:
    async def main() -> None:
        done = asyncio.Event()
        t0 = time.perf_counter()
        tasks = [asyncio.create_task(visit(v, server, [], 3, 120.0, done, t0, seed=1)) for v in viewers]
        while not all(v.done for v in viewers):
            await asyncio.sleep(0.1)
        done.set()
        await asyncio.gather(*tasks)

    # In a thread of its own: the browser fixtures' Playwright holds an event loop in this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, main()).result(timeout=600)


def test_every_page_of_the_navigation_is_visited() -> None:
    pages = {link.page for link in links()}
    assert {"home", "walkthrough", "model"} <= pages
    assert all(isinstance(link, Link) for link in links())


@pytest.mark.browser
def test_three_viewers_at_once(streamlit_server: StreamlitServer) -> None:
    by_page = {link.page: link for link in links()}
    viewers = [Viewer(i, by_page[p], 0.2 * i) for i, p in enumerate(("walkthrough", "model", "heads"))]
    mark = streamlit_server.log_mark()
    _run(streamlit_server, viewers)
    for v in viewers:
        assert v.errors == [], (v.link.path, v.errors)
        assert v.page_s is not None, v.link.path
        assert len(v.change_s) >= 2, (v.link.path, v.changed)
    walk = viewers[0]
    assert walk.changed[0] == "wt_next"  # a listener presses Next first
    assert "md_text" in viewers[1].changed  # and types a sentence of their own
    assert streamlit_server.logged_errors(mark) == []


def test_exceptions_and_error_boxes_count_as_errors() -> None:
    from streamlit.proto.Alert_pb2 import Alert
    from streamlit.proto.Exception_pb2 import Exception as ExceptionProto

    assert _element_errors(ExceptionProto(type="ValueError", message="bad"), "exception") == [
        "exception: ValueError: bad"
    ]
    assert _element_errors(Alert(body="These settings cannot be computed", format=Alert.ERROR), "alert")
    assert _element_errors(Alert(body="A note", format=Alert.INFO), "alert") == []


def test_a_slider_change_stays_in_its_range() -> None:
    from streamlit.proto.Slider_pb2 import Slider

    at_max = Slider(id="$$ID-x-n", min=2, max=16, step=1, default=[16])
    state = _state_for_change(Widget(at_max.id, "slider", at_max, False), random.Random(0))
    assert state is not None and list(state.double_array_value.data) == [15]
    chosen = Slider(id="$$ID-x-dk", options=["1", "2", "4"], default=[1])
    state = _state_for_change(Widget(chosen.id, "slider", chosen, False), random.Random(0))
    assert state is not None and list(state.string_array_value.data) == ["4"]
