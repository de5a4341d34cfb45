"""AppTest of the heads page: every tab, every widget's edge values, links (today's, older and tampered), talk mode.

AppTest seeds the bound widgets from the link but does not see what the browser writes back to
the URL; tests/test_browser_heads.py checks that.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import open_app_page
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Widget

from attention_core.kv_cache import MODEL_SHAPES, kv_cache_bytes
from tests.support.shown import metrics, notice
from ui import draw
from ui.heads.calculator import CACHE_DTYPES, MODELS
from ui.heads.examples import heads_example

TABS = ("Split", "Heads side by side", "MHA → GQA → MQA", "KV-cache calculator", "Decode")
# The decode tab measures once per (longest context, d_model) and per press of "Measure again":
# start from the smallest measurement so that each move costs a second or two.
SMALL = {"hd_tmax": "2k", "hd_tdm": "64"}
SHARED = {"hd_dm": ("select_slider", (16, 64)), "hd_h": ("select_slider", (1, 8)),
          "hd_seed": ("number_input", (9999, 0)), "hd_causal": ("toggle", (True, False))}  # fmt: skip
# Each tab's own widgets, with the values a viewer can push them to (the shared ones are on every tab).
EDGES: dict[str, dict[str, tuple[str, tuple[Any, ...]]]] = {
    "Split": {},
    "Heads side by side": {},
    "MHA → GQA → MQA": {"hd_kv": ("select_slider", (1, 4))},
    "KV-cache calculator": {
        "hd_model": ("selectbox", MODELS), "hd_ctx": ("select_slider", ("1k", "128k")),
        "hd_batch": ("number_input", (256, 1)), "hd_dtype": ("selectbox", CACHE_DTYPES),
        "hd_gpu": ("selectbox", (16, 141)), "hd_weights": ("toggle", (False, True)),
    },
    "Decode": {
        "hd_step": ("slider", (0, 10)), "hd_dhead": ("number_input", (3, 0)), "hd_kv": ("select_slider", (1, 4)),
        "hd_tmax": ("select_slider", ("16k", "2k")), "hd_tdm": ("select_slider", (256, 64)),
        "hd_measure": ("button", ()),
    },
}  # fmt: skip


def open_tab(tab: str, query: dict[str, str] | None = None) -> AppTest:
    at = open_app_page("heads", {"hd_tab": tab, **SMALL, **(query or {})})
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_shows_a_formula_and_a_figure(tab: str) -> None:
    at = open_tab(tab)
    assert at.session_state["hd_tab"] == tab
    assert len(at.latex) >= 1
    assert len(at.get("plotly_chart")) >= 1
    assert not at.error, [e.value for e in at.error]
    assert not notice(at)


@pytest.mark.parametrize("tab", TABS)
def test_every_widget_edge_value_runs_cleanly(tab: str) -> None:
    at = open_tab(tab)
    assert {n.key for n in at.main if isinstance(n, Widget)} == set(SHARED | EDGES[tab]), "a widget is not walked"
    for key, (kind, values) in (SHARED | EDGES[tab]).items():
        widget = getattr(at, kind)(key=key)
        if widget.disabled:
            assert key in SHARED and tab in ("KV-cache calculator", "Decode"), f"{key} is disabled on {tab}"
            continue
        if kind == "button":
            widget.click().run()
        for value in values:
            getattr(at, kind)(key=key).set_value(value).run()
            assert not at.exception, f"{tab}: {key} = {value}: {[e.value for e in at.exception]}"
            assert not at.error, f"{tab}: {key} = {value}: {[e.value for e in at.error]}"
            assert at.session_state[key] == value and at.session_state["hd_tab"] == tab


def test_the_split_snippet_shows_the_shapes_of_the_settings() -> None:
    at = open_tab("Split", {"hd_dm": "64", "hd_h": "8"})
    code = at.code[0].value
    assert "# (1, 11, 8, 8)" in code and "# (1, 8, 11, 11)" in code and "64 / 8 = 8" in code
    at.select_slider(key="hd_h").set_value(2).run()
    assert "# (1, 2, 11, 32)" in at.code[0].value


def test_the_heads_tab_says_the_heads_differ_at_random() -> None:
    at = open_tab("Heads side by side")
    text = " ".join(m.value for m in at.markdown)
    assert "random" in text and "not trained" in text
    assert "head 3:" in text  # where "it" looks, per head


def test_each_head_is_its_own_figure_so_that_a_phone_stacks_them() -> None:
    at = open_tab("Heads side by side", {"hd_h": "8"})
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert [f["layout"]["title"]["text"].count(f"head {i}<") for i, f in enumerate(specs)] == [1] * 8
    bars = [i for i, f in enumerate(specs) if f["data"][0]["showscale"]]
    assert bars == [1, 3, 5, 7]  # one shared 0…1 scale, its bar at the end of each row of two


def test_on_a_projector_two_rows_of_heads_name_the_keys_once_and_fit_the_window() -> None:
    """Talk mode, h = 8: four heads a row; only the lower row names the keys, so both rows fit 720 px."""
    specs = [json.loads(c.proto.spec) for c in open_tab("Heads side by side", {"hd_h": "8", "talk": "true"})
             .get("plotly_chart")]  # fmt: skip
    assert [f["layout"]["xaxis"].get("showticklabels", True) for f in specs] == [False] * 4 + [True] * 4
    top, bottom = specs[0]["layout"]["height"], specs[4]["layout"]["height"]
    assert top + bottom + 16 <= 720 - draw.TALK_ABOVE["heads.Heads side by side"] - 16 and bottom > top


def test_gqa_numbers_come_from_the_core() -> None:
    at = open_tab("MHA → GQA → MQA", {"hd_h": "8", "hd_kv": "2", "hd_dm": "64", "hd_seed": "3"})
    e = heads_example(d_model=64, n_heads=8, n_kv_heads=2, seed=3)
    m = metrics(at)
    assert m["Attention weights"] == f"{2 * 64 * 64 + 2 * 64 * 2 * 8:,}".replace(",", " ")  # W_Q, W_O; 2 K/V heads
    assert m["Output |Δ| vs MHA"] == f"{e.max_abs_diff:.3g}"
    assert m["KV cache per token"] == f"{2 * 2 * 8 * 4} B"  # K and V, 2 heads of d_k = 8, float32
    assert "(GQA)" in at.latex[0].value
    at.select_slider(key="hd_kv").set_value(8).run()  # MHA: no difference
    assert metrics(at)["Output |Δ| vs MHA"] == "0" and "(MHA)" in at.latex[0].value


def test_a_kv_count_that_does_not_divide_the_heads_is_explained_not_raised() -> None:
    at = open_tab("MHA → GQA → MQA", {"hd_h": "8", "hd_kv": "3"})
    warning = " ".join(w.value for w in at.warning)
    assert "3 K/V heads cannot serve 8 query heads" in warning and "must divide" in warning and "Showing 2" in warning
    assert at.select_slider(key="hd_kv").value == 2
    assert "hd_kv = “3”" in notice(at)  # the frame names it too


def test_the_kv_heads_chosen_on_one_tab_are_decoded_on_the_other() -> None:
    at = open_tab("MHA → GQA → MQA", {"hd_h": "8", "hd_kv": "1"})
    at.query_params["hd_tab"] = "Decode"  # the link after a click on the tab (AppTest sends its link on every run)
    at.run()
    assert not at.exception
    assert at.select_slider(key="hd_kv").value == 1
    assert metrics(at)["K/V heads in the cache"] == "1 of 8"


def test_the_calculator_matches_kv_cache_bytes() -> None:
    at = open_tab("KV-cache calculator", {"hd_model": "Llama-3-70B", "hd_ctx": "128k", "hd_batch": "4",
                                          "hd_gpu": "141"})  # fmt: skip
    m = MODEL_SHAPES["Llama-3-70B"]
    own = kv_cache_bytes(m.layers, m.n_kv_heads, m.head_dim, 131072, 4, "float16")
    mha = kv_cache_bytes(m.layers, m.n_heads, m.head_dim, 131072, 4, "float16")
    values = metrics(at)
    assert values["Llama-3-70B · 8 K/V"] == f"{own / 2**30:.1f} GiB"
    assert values["MHA · 64 K/V heads"] == f"{mha / 2**40:.1f} TiB"
    assert values["On 141 GB"] == "does not fit"
    assert any("8 192 positions" in i.value for i in at.info)  # past the published context, said so
    at.selectbox(key="hd_model").set_value("GPT-2 small").run()
    assert not at.exception and "GPT-2 small · 12 K/V" in metrics(at)


def test_weights_too_big_for_the_gpu_get_a_warning() -> None:
    at = open_tab("KV-cache calculator", {"hd_model": "Llama-3-70B", "hd_gpu": "16", "hd_dtype": "float32"})
    assert any("exceed this GPU's memory" in w.value for w in at.warning)
    assert metrics(at)["Longest context"] == "none"


def test_the_published_shapes_are_built_when_opened() -> None:
    at = open_tab("KV-cache calculator")
    assert not at.dataframe
    at.session_state["hd_shapes"] = True  # as if the viewer opened the expander
    at.run()
    assert list(at.dataframe[0].value["model"]) == list(MODELS)


def test_the_decode_tab_checks_and_measures() -> None:
    at = open_tab("Decode", {"hd_step": "10", "hd_kv": "1"})
    m = metrics(at)
    assert m["Keys and values in the cache"] == "11 tokens"
    assert float(m["Token-by-token vs full causal"].split("≤")[1]) < 1e-5
    assert m["K/V heads in the cache"] == "1 of 4"
    assert m["Slope with a cache"] != "–"
    assert any("Measured at" in c.value for c in at.caption)
    at.button(key="hd_measure").click().run()
    assert not at.exception and at.session_state["hd_run"] == 1


def test_a_link_in_todays_form_restores_the_view() -> None:
    """What the browser writes for a chosen view (tests/test_browser_heads.py checks the writing itself)."""
    link = {"hd_model": "Mistral-7B", "hd_ctx": "32k", "hd_batch": "8", "hd_weights": "false", "hd_gpu": "24"}
    at = open_tab("KV-cache calculator", link)
    assert at.selectbox(key="hd_model").value == "Mistral-7B"
    assert at.select_slider(key="hd_ctx").value == "32k"
    assert at.number_input(key="hd_batch").value == 8
    assert at.toggle(key="hd_weights").value is False
    assert at.selectbox(key="hd_gpu").value == 24
    assert not notice(at)


def test_a_bookmark_from_before_bound_widgets_opens_the_same_view() -> None:
    """Old links wrote toggles as 1/0 and contexts in tokens; they are rewritten once and open as before."""
    at = open_app_page("heads", {"hd_tab": "KV-cache calculator", "talk": "1", "hd_causal": "1", "hd_ctx": "32768",
                                 "hd_weights": "0", "hd_gpu": "80", "hd_kv": "2"})  # fmt: skip
    assert not at.exception and not notice(at)
    s = at.session_state
    assert (s["talk"], s["hd_causal"], s["hd_ctx"], s["hd_weights"], s["hd_gpu"]) == (True, True, "32k", False, 80)
    at = open_app_page("heads", {"hd_tab": "Decode", "hd_tmax": "2048", "hd_tdm": "64", "hd_step": "3"})
    assert not at.exception and not notice(at)
    assert (at.session_state["hd_tmax"], at.session_state["hd_step"]) == ("2k", 3)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"hd_tab": "<script>x</script>", "hd_h": "1e9", "hd_dm": "-5", "hd_kv": "zero"}, ("hd_tab", "hd_h", "hd_dm")),
        ({"hd_tab": "Decode", "hd_tmax": "999999999", "hd_tdm": "nan", "hd_step": "-3", "hd_dhead": "99"},
         ("hd_tmax", "hd_tdm", "hd_step", "hd_dhead")),
        ({"hd_tab": "KV-cache calculator", "hd_model": "GPT-5", "hd_ctx": "3", "hd_batch": "1e6", "hd_gpu": "9000",
          "hd_dtype": "float8"}, ("hd_model", "hd_ctx", "hd_batch", "hd_gpu", "hd_dtype")),
        ({"hd_tab": "MHA → GQA → MQA", "hd_h": "3", "hd_kv": "7", "hd_seed": "-1"}, ("hd_h", "hd_kv", "hd_seed")),
    ],
)  # fmt: skip
def test_a_tampered_link_falls_back_to_defaults_with_a_notice(query: dict[str, str], named: tuple[str, ...]) -> None:
    at = open_app_page("heads", query)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    text = notice(at)
    assert all(f"{key} =" in text for key in named), text
    assert "<script>" not in text
    assert at.session_state["hd_tab"] in TABS
    assert (at.session_state["hd_h"], at.session_state["hd_dm"], at.session_state["hd_seed"]) == (4, 32, 0)


def test_talk_mode_keeps_formulas_and_figures_and_drops_the_prose() -> None:
    for tab in ("Split", "MHA → GQA → MQA", "KV-cache calculator"):
        normal, talk = open_tab(tab), open_tab(tab, {"talk": "true"})
        assert len(talk.latex) == len(normal.latex) >= 1
        assert len(talk.get("plotly_chart")) == len(normal.get("plotly_chart"))
        assert len(talk.markdown) < len(normal.markdown)


def test_shared_controls_are_disabled_on_the_calculator() -> None:
    at = open_tab("KV-cache calculator")
    assert at.select_slider(key="hd_dm").disabled and at.number_input(key="hd_seed").disabled
    at = open_tab("Split")
    assert not at.select_slider(key="hd_h").disabled
