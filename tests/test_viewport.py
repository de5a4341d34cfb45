"""ui.viewport: the size the browser reported (or the 1280×720 guess) and the heights derived from it."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script() -> None:
    import streamlit as st

    from ui import viewport

    vp = viewport.viewport()
    st.write(f"{vp.width}x{vp.height} main {vp.main_width} measured {vp.measured}")
    st.write(f"fit {viewport.fit_height(250, natural=900)} small {viewport.fit_height(250, natural=300)}")
    st.write(f"floor {viewport.fit_height(10_000, natural=900, low=260)}")


def _run(size: object = None, talk: bool = True) -> list[str]:
    at = AppTest.from_function(_script)
    at.session_state["talk"] = talk
    if size is not None:
        at.session_state["_viewport"] = {"size": size}
    at.run()
    assert not at.exception
    return [m.value for m in at.markdown]


def test_before_the_browser_reports_the_guess_is_a_projector() -> None:
    shown = _run()
    assert shown[0] == "1280x720 main 1180 measured False"
    # 720 − 250 above − 16 below = 454: the figure fits the projector even before the first report
    assert shown[1] == "fit 454 small 300"
    assert shown[2] == "floor 260"


def test_a_reported_size_sets_the_room_left() -> None:
    shown = _run({"w": 1920, "h": 1080, "main": 1760})
    assert shown[0] == "1920x1080 main 1760 measured True"
    assert shown[1] == f"fit {1080 - 250 - 16} small 300"


def test_a_nonsense_report_falls_back_to_the_guess() -> None:
    for bad in ({"w": "x", "h": 5}, {"w": 10, "h": 10}, "junk", {"w": 1e9, "h": 800}):
        assert _run(bad)[0] == "1280x720 main 1180 measured False", bad


def test_outside_talk_mode_a_laptop_is_assumed_and_nothing_is_fitted_to_a_report() -> None:
    shown = _run({"w": 1920, "h": 1080, "main": 1760}, talk=False)
    assert shown[0] == "1280x800 main 820 measured False"
