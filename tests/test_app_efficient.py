"""AppTest of the Beyond n² page: every tab, each widget's edges, bad links, talk mode, and the Run path.

Runs measure n = 128 only, with no minimum timing time and torch.compile switched off (the dense
fallback), so a run takes a second or two. Nothing asserts a speed. The URL that the browser
writes when a control changes is checked in tests/test_browser_efficient.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import open_app_page
from streamlit.testing.v1 import AppTest

import ui.efficient.cost as cost
from attention_core.efficient.flex import NO_COMPILE_ENV
from tests.support.shown import metrics, notes, notice, text
from ui.runlock import RunLock

TABS = ("Sparse patterns", "Kernels & low rank", "Accuracy", "Cost")
TINY = {"ef_tab": "Cost", "ef_nmin": "128", "ef_nmax": "128", "ef_budget": "5"}


@pytest.fixture(autouse=True)
def _fast(monkeypatch):
    monkeypatch.setattr(cost, "MIN_RUN_TIME", 0.0)
    monkeypatch.setenv(NO_COMPILE_ENV, "1")  # the page's fallback path: no compile of seconds per test


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = open_app_page("efficient", query)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_opens_from_its_link_and_draws(tab: str) -> None:
    at = open_page({"ef_tab": tab})
    assert at.session_state["ef_tab"] == tab
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == {"Sparse patterns": 2, "Kernels & low rank": 2, "Accuracy": 2, "Cost": 0}[tab]
    assert not notice(at)


def test_the_window_tab_reports_the_work_skipped_as_counted_by_hand() -> None:
    """n = 1024, w = 128: 128-token tiles i and j share an allowed pair only when |i − j| ≤ 1."""
    at = open_page({"ef_n": "1024", "ef_win": "128"})
    tiles = np.abs(np.subtract.outer(np.arange(8), np.arange(8))) <= 1
    tokens = np.abs(np.subtract.outer(np.arange(1024), np.arange(1024))) <= 128
    m = metrics(at)
    assert m["Work skipped"] == f"{1 - tiles.mean():.0%}" == "66%"
    assert m["Pairs allowed"] == f"{tokens.mean():.1%}"


@pytest.mark.parametrize("pattern", ["Window", "Window + globals", "Dilated", "BigBird"])
def test_each_pattern_and_its_knobs_at_their_edges(pattern: str) -> None:
    at = open_page({"ef_pat": pattern, "ef_n": "1024"})
    knobs = {"Window + globals": {"ef_glob": (0, 256)}, "Dilated": {"ef_dil": (1, 16)},
             "BigBird": {"ef_glob": (0, 256), "ef_rand": (0, 8), "ef_block": (16, 512)}}.get(pattern, {})  # fmt: skip
    drawn = {w.key for w in at.main if getattr(w, "key", None) in ("ef_glob", "ef_dil", "ef_rand", "ef_block")}
    assert drawn == set(knobs), "a pattern draws exactly its own knobs"
    for key, values in {"ef_win": (1, 1024), "ef_causal": (True, False), **knobs}.items():
        for value in values:
            next(w for w in at.main if getattr(w, "key", None) == key).set_value(value).run()
            assert not at.exception and not at.error, (key, value, [e.value for e in at.exception + at.error])
    at.slider(key="ef_n").set_value(128).run()  # BigBird's block is 512 by now: it does not divide 128
    assert not at.exception and len(at.error) == (pattern == "BigBird")


def test_a_bigbird_block_that_does_not_divide_the_padded_length_is_a_message() -> None:
    at = open_page({"ef_pat": "BigBird", "ef_n": "384", "ef_block": "256"})
    assert not at.exception
    assert len(at.error) == 1 and "does not divide the padded length 384" in at.error[0].value
    assert not at.get("plotly_chart")


def test_the_kernels_tab_shows_the_performer_law_and_the_spectrum() -> None:
    at = open_page({"ef_tab": "Kernels & low rank", "ef_k": "4"})
    m = metrics(at)
    ratio = float(m["Performer, 16 → 256 features"].split("×")[0])
    assert ratio > 2.0  # spread-out inputs: the error falls about as 1/√m, i.e. 4× from 16 to 256
    assert next(label for label in m if label.startswith("Top 4 of"))
    at.button_group(key="ef_spread").set_value("peaked").run()
    at.slider(key="ef_k").set_value(64).run()
    assert not at.exception and not at.error


def test_a_window_as_wide_as_the_sentence_is_exact_attention() -> None:
    at = open_page({"ef_tab": "Accuracy", "ef_awin": "32"})  # 32 ≥ the 16 tokens of the sentence
    m = metrics(at)
    assert m["Output error"] == "0.0%" and m["Exact weight kept"] == "100%"
    exact, kept = m["“it” looks most at “animal”"].removesuffix(" of 12 heads").split(" → ")
    assert exact == kept and int(exact) >= 1


def test_a_window_narrower_than_it_to_animal_loses_animal_in_every_head() -> None:
    at = open_page({"ef_tab": "Accuracy", "ef_awin": "3"})
    m = metrics(at)
    assert m["“it” looks most at “animal”"].endswith("→ 0 of 12 heads")  # animal is outside it's window: weight 0
    assert "8 tokens apart" in notes(at)["“it” looks most at “animal”"]
    assert float(m["Output error"].rstrip("%")) > 1.0
    assert "KL(route ‖ exact)" in m and "KL(exact ‖ route)" not in m  # the finite direction for a pattern


@pytest.mark.parametrize("route", ["Window + globals", "Dilated", "BigBird", "Linear (elu + 1)", "Performer"])
def test_every_route_on_the_model_and_on_random_inputs(route: str) -> None:
    at = open_page({"ef_tab": "Accuracy", "ef_var": route})
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 2  # exact beside the route
    dense = route in ("Linear (elu + 1)", "Performer")
    assert ("KL(exact ‖ route)" in metrics(at)) == dense
    at.button_group(key="ef_in").set_value("random").run()
    at.select_slider(key="ef_an").set_value(32).run()
    at.toggle(key="ef_acausal").set_value(True).run()
    at.slider(key="ef_head").set_value(11).run()
    assert not at.exception and not at.error
    assert "Random inputs: n = 32" in text(at)


def test_linformer_says_why_it_has_no_weights_and_a_rank_past_the_tokens_is_a_message() -> None:
    at = open_page({"ef_tab": "Accuracy", "ef_var": "Linformer", "ef_rank": "8"})
    assert metrics(at)["Per-row KL"] == "—"
    assert "coefficients, not weights" in at.get("plotly_chart")[1].proto.spec  # the route's panel says why: no weights
    at.slider(key="ef_rank").set_value(64).run()  # the sentence has 16 tokens
    assert not at.exception
    assert len(at.error) == 1 and "rank must be ≤ 16" in at.error[0].value


def test_an_empty_sentence_is_a_message() -> None:
    at = open_page({"ef_tab": "Accuracy"})
    at.text_input(key="ef_text").set_value("").run()
    assert not at.exception and "the text is empty" in at.error[0].value


@pytest.mark.parametrize(
    ("query", "key"),
    [({"ef_win": "0"}, "ef_win"), ({"ef_n": "100000"}, "ef_n"), ({"ef_pat": "Spiral"}, "ef_pat"),
     ({"ef_tab": "Accuracy", "ef_feat": "3", "ef_var": "Performer"}, "ef_feat"),
     ({"ef_tab": "Accuracy", "ef_rank": "0", "ef_var": "Linformer"}, "ef_rank"),
     ({"ef_tab": "Cost", "ef_cwin": "-5"}, "ef_cwin"), ({"ef_tab": "Cost", "ef_nmax": "3000"}, "ef_nmax")],
)  # fmt: skip
def test_a_bad_value_in_a_link_falls_back_to_the_default_with_a_notice(query: dict[str, str], key: str) -> None:
    at = open_page(query)
    assert f"{key} =" in notice(at)
    assert not at.error


def test_a_link_in_todays_form_restores_the_view() -> None:
    link = {"ef_tab": "Accuracy", "ef_in": "Random", "ef_var": "Dilated", "ef_awin": "5", "ef_adil": "3",
            "ef_an": "128", "ef_seed": "7", "ef_acausal": "true", "ef_head": "2"}  # fmt: skip
    s = open_page(link).session_state
    assert (s["ef_in"], s["ef_var"], s["ef_awin"], s["ef_adil"]) == ("random", "dilated", 5, 3)
    assert (s["ef_an"], s["ef_seed"], s["ef_acausal"], s["ef_head"]) == (128, 7, True, 2)


def test_talk_mode_folds_the_controls_and_drops_the_prose() -> None:
    normal, talk = open_page(), open_page({"talk": "true"})
    assert "Exact attention compares every query" in text(normal)
    assert "Exact attention compares every query" not in text(talk) and not talk.title
    assert len(talk.get("plotly_chart")) == 2 and metrics(talk) == metrics(normal)  # the pattern's two panels


def test_run_measures_every_route_beside_sdpa_with_the_dense_fallback_labelled() -> None:
    at = open_page(TINY)
    assert "cannot run compiled here" in text(at) and "sdpa-masked" in text(at)
    at.button(key="ef_run").click().run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 2  # time and memory
    routes = next(df.value for df in at.dataframe if "route" in df.value.columns)
    assert list(routes["route"]) == ["sdpa", "sdpa-masked(256)", "linear", "performer(256)", "linformer(256)"]
    lra = next(df.value for df in at.dataframe if "model" in df.value.columns).set_index("model")
    assert lra.loc["Transformer", "here: speed ×"] == 1.0  # SDPA against itself
    assert lra.loc["Local Attention", "route here"] == "sdpa-masked"  # what ran for the window, said so
    assert np.isnan(lra.loc["BigBird", "here: speed ×"])  # not timed here
    assert lra.loc["Performer", "LRA speed ×"] == 5.7


def test_a_busy_server_queues_the_run_and_gives_up_without_an_exception(monkeypatch) -> None:
    monkeypatch.setattr(RunLock, "try_acquire", lambda self, timeout=0.0, what="": False)
    monkeypatch.setattr(RunLock, "wait_s", 0.2)
    at = open_page(TINY)
    at.button(key="ef_run").click().run()
    assert not at.exception
    assert any("Still busy" in s.label for s in at.status)
    assert "Press **Run** to measure" in text(at)


def test_a_size_past_the_memory_cap_is_skipped_and_said(monkeypatch) -> None:
    # 1070 KiB: beyond the inputs' 768 KiB, SDPA at n = 128 needs 260 KiB, the masked path 340 (its masks)
    monkeypatch.setenv("ATTENTION_BENCH_CAP_GB", "0.00102")
    at = open_page({**TINY, "ef_routes": "sdpa-masked"})
    assert "1 skipped: sdpa-masked(256) at n = 128 needs" in text(at)
    at.button(key="ef_run").click().run()
    lines = {m.value.split("`")[1]: m.value for m in at.markdown if m.value.startswith(":material/")}
    assert "**skipped**, needs" in lines["sdpa-masked(256)"] and "ms" in lines["sdpa"]


def test_no_route_disables_run_and_cancel_is_harmless() -> None:
    at = open_page({"ef_tab": "Cost"})
    at.multiselect(key="ef_routes").set_value([]).run()
    assert at.button(key="ef_run").disabled and "Choose at least one route" in text(at)
    at.button(key="ef_cancel").click().run()
    assert not at.exception
