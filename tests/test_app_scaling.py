"""AppTest of the √d_k explorer: every tab, every widget's edge values, URL state, talk mode, NaN explained."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from widget_walk import apply, edge_moves, restore_move, widgets

from attention_core.scaling import DEFAULT_LR

TABS = ("Variance", "Saturation", "Gradients", "Scaling strategies", "Initialisation", "Numerical stability",
        "Training")  # fmt: skip
# The sidebar's widgets are the frame's, tested with every page elsewhere; the tab choice is this
# test's parameter.
NOT_WALKED = {"talk", "sc_tab"}
# Where each tab's edge walk starts: small settings, so that each widget's extreme is tried on
# its own (d_k = 4096, 20,000 samples, 500 steps …) without every other change paying for it too.
EDGE_START = {
    "Variance": {"sc_ns": "1000"},
    "Saturation": {"sc_nk": "4"},
    "Gradients": {"sc_nk": "4"},
    "Scaling strategies": {"sc_nk": "4", "sc_dk": "64"},
    "Initialisation": {"sc_dm": "64"},
    "Numerical stability": {},
    "Training": {"sc_dk": "16", "sc_nk": "4", "sc_steps": "100"},
}


APP = str(Path(__file__).resolve().parents[1] / "app.py")


def open_page(query: dict[str, str]) -> AppTest:
    """The explorer opened from a link with ``query`` (the home page's first run would drop it)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(query)  # the frame (talk mode) reads its part on the first run
    at.run()  # AppTest knows the navigation's pages only after a first run
    at.switch_page("pages/scaling.py")
    at.query_params.clear()
    at.query_params.update(query)
    at.run()
    return at


def open_tab(tab: str, query: dict[str, str] | None = None) -> AppTest:
    at = open_page({"sc_tab": tab, **(query or {})})
    assert not at.exception, [e.value for e in at.exception]
    return at


def qp(at: AppTest, key: str) -> str | None:
    value = at.query_params.get(key)
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def page_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [w.value for w in at.warning]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_shows_formula_numbers_and_figures(tab: str) -> None:
    at = open_tab(tab)
    assert at.session_state["sc_tab"] == tab
    assert len(at.latex) >= 1
    assert len(at.dataframe) >= 1
    assert len(at.get("plotly_chart")) >= 1
    assert not at.error, [e.value for e in at.error]
    if tab != TABS[0]:
        assert qp(at, "sc_tab") == tab


@pytest.mark.parametrize("tab", TABS)
def test_every_widget_edge_value_runs_cleanly(tab: str) -> None:
    at = open_tab(tab, EDGE_START[tab])
    names = [n for n in widgets(at) if n not in NOT_WALKED]
    assert names, "the tab shows no widgets"
    for name in names:
        w = widgets(at).get(name)
        if w is None or getattr(w.proto, "disabled", False):
            continue
        back = restore_move(w)
        for move in edge_moves(w):
            if not apply(at, move):
                continue
            at.run()
            assert not at.exception, f"{tab}: {move}: {[e.value for e in at.exception]}"
            assert not at.error, f"{tab}: {move}: {[e.value for e in at.error]}"
            assert at.session_state["sc_tab"] == tab, f"{move} left the tab"
        if back is not None and apply(at, back):
            at.run()


def test_the_url_keeps_the_view_and_restores_it() -> None:
    at = open_tab("Training")
    at.select_slider(key="sc_dk").set_value(64)
    at.select_slider(key="sc_nk").set_value(8)
    at.radio(key="sc_opt").set_value("sgd")
    at.select_slider(key="sc_steps").set_value(100)
    at.run()
    assert not at.exception
    wanted = {"sc_tab": "Training", "sc_dk": "64", "sc_nk": "8", "sc_opt": "sgd", "sc_steps": "100",
              "sc_lr": f"{DEFAULT_LR['sgd']:g}"}  # fmt: skip
    assert {k: qp(at, k) for k in wanted} == wanted
    again = open_page(wanted)
    assert not again.exception
    for key, value in wanted.items():
        assert str(again.session_state[key]) in (value, str(float(value)) if key == "sc_lr" else value)


def test_a_tabs_own_settings_survive_visiting_another_tab() -> None:
    at = open_tab("Numerical stability")
    at.radio(key="sc_dtype").set_value("float32").run()
    at.session_state["sc_tab"] = "Variance"
    at.run()
    assert qp(at, "sc_dtype") == "float32"
    at.run()  # a second run without the stability widgets on screen
    at.session_state["sc_tab"] = "Numerical stability"
    at.run()
    assert at.radio(key="sc_dtype").value == "float32"


def test_changing_the_optimizer_resets_its_learning_rate() -> None:
    at = open_tab("Training")
    at.select_slider(key="sc_lr").set_value(0.001).run()
    at.radio(key="sc_opt").set_value("sgd").run()
    assert at.select_slider(key="sc_lr").value == DEFAULT_LR["sgd"]
    at.radio(key="sc_opt").set_value("adam").run()
    assert at.select_slider(key="sc_lr").value == DEFAULT_LR["adam"]


def test_a_bad_link_is_clamped_and_explained() -> None:
    at = open_page({"sc_tab": "<b>Nope</b>", "sc_dk": "99999", "sc_tau": "abc", "sc_lr": "0.02",
                               "sc_nk": "3"})  # fmt: skip
    assert not at.exception
    assert at.session_state["sc_tab"] == "Variance"
    assert at.session_state["sc_dk"] == 4096
    assert at.session_state["sc_nk"] in (2, 4)  # snapped to a neighbouring choice
    notice = "\n".join(i.value for i in at.info)
    assert "tab" in notice and "<b>" not in notice
    at.session_state["sc_tab"] = "Training"
    at.run()
    assert at.select_slider(key="sc_lr").value == 0.03  # nearest choice to 0.02 on a log scale


def test_talk_mode_keeps_the_formulas_and_drops_the_prose() -> None:
    for tab in ("Variance", "Training"):
        normal, talk = open_tab(tab), open_tab(tab, {"talk": "1"})
        assert len(talk.latex) == len(normal.latex) >= 1
        assert len(talk.markdown) < len(normal.markdown)


def test_nan_is_never_shown_bare_on_the_stability_tab() -> None:
    at = open_tab("Numerical stability", {"sc_dtype": "float16", "sc_mag": "100"})
    assert "not a number" in " ".join(w.value for w in at.warning).lower()
    cells = at.dataframe[0].value
    flat = [str(x) for x in cells.to_numpy().ravel()]
    assert "NaN (∞/∞)" in flat and not any(x.lower() in ("nan", "inf") for x in flat)
    assert not any(isinstance(x, float) and math.isnan(x) for x in cells.to_numpy().ravel())
    assert "not a number" in " ".join(c.value for c in at.caption).lower()
    ok = open_tab("Numerical stability", {"sc_dtype": "float32", "sc_mag": "50"})
    assert ok.success and not ok.warning


def test_training_tab_states_what_the_run_shows() -> None:
    at = open_tab("Training", {"sc_dk": "1024"})
    text = page_text(at)
    assert "What this run shows." in text
    assert "The scaled model's loss fell below 0.1" in text
    assert "Final loss, unscaled" in text


def test_the_toy_models_cost_is_bounded_at_wide_keys() -> None:
    """steps × d_k ≤ 200 × 4096: a link asking for 500 steps at d_k = 4096 gets 200."""
    at = open_tab("Training", {"sc_dk": "4096", "sc_steps": "500", "sc_nk": "128"})
    steps = at.select_slider(key="sc_steps")
    assert list(steps.options) == ["100", "200"] and steps.value == 200
    assert "batch 4," in " ".join(c.value for c in at.caption)  # batch × keys held at 512


def test_shared_controls_are_disabled_where_they_do_nothing() -> None:
    at = open_tab("Numerical stability")
    assert at.select_slider(key="sc_dk").disabled and at.number_input(key="sc_seed").disabled
    at = open_tab("Variance")
    assert not at.select_slider(key="sc_dk").disabled and at.select_slider(key="sc_nk").disabled


EXIT_RIGHT_AWAY = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
at.switch_page("pages/scaling.py")
at.run()  # the variance tab starts its full-size refinement in the background
assert not at.exception, at.exception
"""


def test_a_process_that_exits_while_the_variance_refines_exits_cleanly() -> None:
    """A daemon refinement thread still inside torch at exit aborted the process (exit code 134)."""
    done = subprocess.run([sys.executable, "-c", EXIT_RIGHT_AWAY, APP], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "terminate called" not in done.stderr
