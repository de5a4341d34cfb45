"""AppTest of the √d_k explorer: every tab, every widget's edge values, links old and new, talk mode, NaN explained."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from attention_core.scaling import DEFAULT_LR
from tests.support.widgets import apply, edge_moves, restore_move, widgets

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
NUMBERS = {tab: f"sc_{key}_numbers" for tab, key in zip(TABS, ("variance", "saturation", "gradients", "strategies",
                                                                  "init", "stability", "training"), strict=True)}
Open = Callable[..., AppTest]
# Figures whose panels are separate charts in st.columns (side by side on a laptop, stacked on a phone), by tab.
PANELS = {
    "Variance": {"sc_histogram", "sc_histogram_scaled"},
    "Saturation": {"sc_saturation_entropy_pct", "sc_saturation_max_weight", "sc_tau_bars", "sc_tau_curve"},
    "Gradients": {"sc_gradient", "sc_gradient_ratio", "sc_jacobian", "sc_jacobian_scaled"},
    "Scaling strategies": {"sc_strategies", "sc_strategies_max_weight"},
}


def open_tab(open_page: Open, tab: str, query: dict[str, str] | None = None) -> AppTest:
    at = open_page("scaling", {"sc_tab": tab, **(query or {})})
    assert not at.exception, [e.value for e in at.exception]
    return at


def switch_tab(at: AppTest, tab: str) -> AppTest:
    """Open ``tab`` as a click does: the browser writes it into the link too, and AppTest sends the link each run."""
    at.session_state["sc_tab"] = at.query_params["sc_tab"] = tab
    return at.run()


def page_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [w.value for w in at.warning]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(str(p) for p in parts)


def notice(at: AppTest) -> str:
    return "\n".join(i.value for i in at.info)


def open_numbers(at: AppTest, tab: str) -> AppTest:
    """Open the tab's "The numbers" expander, as a viewer would: its table is built only then."""
    at.session_state[NUMBERS[tab]] = True
    return at.run()


@pytest.mark.parametrize("tab", list(PANELS))
def test_paired_panels_are_charts_in_columns(open_page: Open, tab: str) -> None:
    """A phone stacks st.columns by itself; plotly's own subplots it cannot, so each panel is its own chart in one."""
    at = open_tab(open_page, tab, EDGE_START[tab])
    in_columns = [[c.proto.id.rsplit("-", 1)[-1] for c in col.children.values() if c.type == "plotly_chart"]
                  for col in at.columns]  # fmt: skip
    assert all(len(keys) <= 1 for keys in in_columns), in_columns
    assert {k for keys in in_columns for k in keys} == PANELS[tab]


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_shows_formula_numbers_and_figures(open_page: Open, tab: str) -> None:
    at = open_tab(open_page, tab)
    assert at.session_state["sc_tab"] == tab
    assert len(at.latex) >= 1
    assert len(at.get("plotly_chart")) >= 1
    assert not at.error, [e.value for e in at.error]
    assert not at.info, notice(at)
    assert not at.dataframe  # a closed expander's table costs a cold page; it is built when opened
    assert len(open_numbers(at, tab).dataframe) == 1 and not at.exception


@pytest.mark.parametrize("tab", TABS)
def test_every_widget_edge_value_runs_cleanly(open_page: Open, tab: str) -> None:
    at = open_tab(open_page, tab, EDGE_START[tab])
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


def test_a_link_in_todays_form_restores_the_view(open_page: Open) -> None:
    """What the browser writes for a chosen view (tests/test_browser.py checks the writing itself)."""
    link = {"sc_tab": "Training", "sc_dk": "64", "sc_nk": "8", "sc_seed": "3", "sc_opt": "SGD", "sc_lr": "0.3",
            "sc_init": "Xavier", "sc_steps": "100"}  # fmt: skip
    at = open_page("scaling", link)
    assert not at.exception and not at.info, notice(at)
    s = at.session_state
    assert (s["sc_tab"], s["sc_dk"], s["sc_nk"], s["sc_seed"]) == ("Training", 64, 8, 3)
    assert (s["sc_opt"], s["sc_lr"], s["sc_init"], s["sc_steps"]) == ("SGD", "0.3", "Xavier", 100)
    assert "d_k = 64, n = 8," in " ".join(c.value for c in open_numbers(at, "Training").caption)


OLD_LINKS = [  # links written before the widgets were bound, and the values they must open
    ({"sc_tab": "Variance", "sc_ns": "2000", "sc_dk": "64"}, {"sc_ns": 2_000, "sc_dk": 64}),
    ({"sc_tab": "Saturation", "sc_tau": "1.0", "sc_nk": "32"}, {"sc_tau": "1", "sc_nk": 32}),
    ({"sc_tab": "Initialisation", "sc_ln": "1", "sc_dm": "64", "sc_std": "0.05"},
     {"sc_ln": True, "sc_dm": 64, "sc_std": 0.05}),
    ({"sc_tab": "Numerical stability", "sc_mag": "50", "sc_dtype": "float32"}, {"sc_mag": 50, "sc_dtype": "float32"}),
    ({"sc_tab": "Training", "sc_opt": "sgd", "sc_lr": "1.0", "sc_init": "lecun", "sc_dk": "16", "talk": "1"},
     {"sc_opt": "SGD", "sc_lr": "1", "sc_init": "1/√d_model", "sc_dk": 16, "talk": True}),
]  # fmt: skip


@pytest.mark.parametrize(("link", "expected"), OLD_LINKS, ids=[link["sc_tab"] for link, _ in OLD_LINKS])
def test_a_bookmark_from_before_bound_widgets_opens_the_same_view(
    open_page: Open, link: dict[str, str], expected: dict[str, object]
) -> None:
    at = open_page("scaling", link)
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["sc_tab"] == link["sc_tab"]
    assert {k: at.session_state[k] for k in expected} == expected
    assert not at.info, notice(at)


def test_a_tabs_own_settings_survive_visiting_another_tab(open_page: Open) -> None:
    at = open_tab(open_page, "Numerical stability")
    at.radio(key="sc_dtype").set_value("float32").run()
    assert not switch_tab(at, "Variance").get("radio")  # the variance tab draws no radio
    at.run()  # a second run without the stability widgets on screen
    assert switch_tab(at, "Numerical stability").radio(key="sc_dtype").value == "float32"


def test_changing_the_optimizer_resets_its_learning_rate(open_page: Open) -> None:
    at = open_tab(open_page, "Training")
    at.select_slider(key="sc_lr").set_value("0.001").run()
    at.radio(key="sc_opt").set_value("SGD").run()
    assert float(at.select_slider(key="sc_lr").value) == DEFAULT_LR["sgd"]
    at.radio(key="sc_opt").set_value("Adam").run()
    assert float(at.select_slider(key="sc_lr").value) == DEFAULT_LR["adam"]


def test_a_bad_link_falls_back_to_defaults_with_a_notice(open_page: Open) -> None:
    at = open_page("scaling", {"sc_tab": "<b>Nope</b>", "sc_dk": "99999", "sc_nk": "3", "sc_seed": "-1",
                               "sc_ns": "abc", "zzz": "1"})  # fmt: skip
    assert not at.exception
    s = at.session_state
    assert (s["sc_tab"], s["sc_dk"], s["sc_nk"], s["sc_seed"], s["sc_ns"]) == ("Variance", 512, 16, 0, 5_000)
    text = notice(at)
    assert text.startswith("This link asked for")
    for key in ("sc_tab =", "sc_dk =", "sc_nk =", "sc_seed =", "sc_ns ="):
        assert key in text
    assert "<b>" not in text and "zzz" not in text
    # A value between two choices was snapped to the nearer one before the widgets were bound; now the default.
    at = open_page("scaling", {"sc_tab": "Training", "sc_dk": "500", "sc_lr": "0.02"})
    assert (at.session_state["sc_dk"], float(at.session_state["sc_lr"])) == (512, DEFAULT_LR["adam"])
    assert "sc_dk =" in notice(at) and "sc_lr =" in notice(at)


@pytest.mark.parametrize("tab", TABS)
def test_talk_mode_keeps_the_formulas_and_drops_the_prose(open_page: Open, tab: str) -> None:
    normal, talk = open_tab(open_page, tab), open_tab(open_page, tab, {"talk": "true"})
    assert not talk.error, [e.value for e in talk.error]
    assert len(talk.latex) == len(normal.latex) >= 1
    assert len(talk.markdown) < len(normal.markdown)
    assert [m.label for m in talk.metric] == [m.label for m in normal.metric]  # under the figure, not gone
    assert len(talk.get("plotly_chart")) == len(normal.get("plotly_chart"))


def test_nan_is_never_shown_bare_on_the_stability_tab(open_page: Open) -> None:
    at = open_numbers(open_tab(open_page, "Numerical stability", {"sc_dtype": "float16", "sc_mag": "100"}),
                      "Numerical stability")
    assert "not a number" in " ".join(w.value for w in at.warning).lower()
    cells = at.dataframe[0].value
    flat = [str(x) for x in cells.to_numpy().ravel()]
    assert "NaN (∞/∞)" in flat and not any(x.lower() in ("nan", "inf") for x in flat)
    assert not any(isinstance(x, float) and math.isnan(x) for x in cells.to_numpy().ravel())
    assert "not a number" in " ".join(c.value for c in at.caption).lower()
    ok = open_tab(open_page, "Numerical stability", {"sc_dtype": "float32", "sc_mag": "50"})
    assert ok.success and not ok.warning


def test_training_tab_states_what_the_run_shows(open_page: Open) -> None:
    at = open_tab(open_page, "Training", {"sc_dk": "1024"})
    text = page_text(at)
    assert "What this run shows." in text
    assert "The scaled model's loss fell below 0.1" in text
    assert "Final loss, unscaled" in text


def test_the_toy_models_cost_is_bounded_at_wide_keys(open_page: Open) -> None:
    """steps × d_k ≤ 200 × 4096: a link asking for 500 steps at d_k = 4096 gets 200, and says so."""
    at = open_tab(open_page, "Training", {"sc_dk": "4096", "sc_steps": "500", "sc_nk": "128"})
    steps = at.select_slider(key="sc_steps")
    assert list(steps.options) == ["100", "200"] and steps.value == 200
    assert "sc_steps =" in notice(at)
    assert "batch 4," in " ".join(c.value for c in open_numbers(at, "Training").caption)  # batch × keys held at 512


def test_shared_controls_are_disabled_where_they_do_nothing(open_page: Open) -> None:
    at = open_tab(open_page, "Numerical stability", {"sc_dk": "64"})
    assert at.select_slider(key="sc_dk").disabled and at.number_input(key="sc_seed").disabled
    switch_tab(at, "Variance")  # a linked value waits in the disabled control
    assert at.select_slider(key="sc_dk").value == 64
    assert not at.select_slider(key="sc_dk").disabled and at.select_slider(key="sc_nk").disabled


def test_the_variance_tab_computes_in_the_script_with_no_thread_left_behind(open_page: Open) -> None:
    """Every sample is measured in the run itself: no background refinement, nothing running after it."""
    before = set(threading.enumerate())
    at = open_numbers(open_tab(open_page, "Variance", {"sc_seed": "11", "sc_ns": "20000"}), "Variance")
    assert "20,000 samples per d_k, seed 11." in " ".join(c.value for c in at.caption)
    assert not [t.name for t in set(threading.enumerate()) - before if t.is_alive() and not t.daemon]
