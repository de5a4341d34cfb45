"""AppTest of the heads page: every tab, every widget's edge values, URL state and tampering, talk mode."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from widget_walk import ROOT, apply, edge_moves, restore_move, widgets

from attention_core.kv_cache import MODEL_SHAPES, kv_cache_bytes
from ui.heads.examples import heads_example

TABS = ("Split", "Heads side by side", "MHA → GQA → MQA", "KV-cache calculator", "Decode")
NOT_WALKED = {"talk", "hd_tab"}  # the frame's toggle is tested elsewhere; the tab is this test's parameter
# The decode tab measures once per (longest context, d_model) and per press of "Measure again":
# start its walk from the smallest measurement so each edge move costs a second or two.
EDGE_START = {"Decode": {"hd_tmax": "2048", "hd_tdm": "64"}}


def open_link(query: dict[str, str]) -> AppTest:
    """The page opened from a link with ``query``; the frame (talk mode) reads its part on the first run."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(query)
    at.run()  # AppTest knows the navigation's pages only after a first run
    at.switch_page("pages/heads.py")
    at.query_params.clear()
    at.query_params.update(query)
    at.run()
    return at


def open_tab(tab: str, query: dict[str, str] | None = None) -> AppTest:
    at = open_link({"hd_tab": tab, **(query or {})})
    assert not at.exception, [e.value for e in at.exception]
    return at


def qp(at: AppTest, key: str) -> str | None:
    value = at.query_params.get(key)
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_shows_a_formula_and_a_figure(tab: str) -> None:
    at = open_tab(tab)
    assert at.session_state["hd_tab"] == tab
    assert len(at.latex) >= 1
    assert len(at.get("plotly_chart")) >= 1
    assert not at.error, [e.value for e in at.error]
    if tab != TABS[0]:
        assert qp(at, "hd_tab") == tab


@pytest.mark.parametrize("tab", TABS)
def test_every_widget_edge_value_runs_cleanly(tab: str) -> None:
    at = open_tab(tab, EDGE_START.get(tab))
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
            assert at.session_state["hd_tab"] == tab, f"{move} left the tab"
        if back is not None and apply(at, back):
            at.run()


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


def test_gqa_numbers_come_from_the_core() -> None:
    at = open_tab("MHA → GQA → MQA", {"hd_h": "8", "hd_kv": "2", "hd_dm": "64", "hd_seed": "3"})
    e = heads_example(d_model=64, n_heads=8, n_kv_heads=2, seed=3)
    m = metrics(at)
    assert m["Attention weights"] == f"{e.params_gqa:,}".replace(",", " ")
    assert m["Output |Δ| vs MHA"] == f"{e.max_abs_diff:.3g}"
    assert m["KV cache per token"] == f"{2 * 2 * 8 * 4} B"  # K and V, 2 heads of d_k = 8, float32
    at.select_slider(key="hd_kv").set_value(8).run()  # MHA: no difference
    assert metrics(at)["Output |Δ| vs MHA"] == "0"
    assert qp(at, "hd_kv") == "8"


def test_a_kv_count_that_does_not_divide_the_heads_is_explained_not_raised() -> None:
    at = open_tab("MHA → GQA → MQA", {"hd_h": "8", "hd_kv": "3"})
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "must divide" in warning and "Showing 2" in warning
    assert at.select_slider(key="hd_kv").value == 2


def test_the_calculator_matches_kv_cache_bytes() -> None:
    at = open_tab("KV-cache calculator", {"hd_model": "Llama-3-70B", "hd_ctx": "131072", "hd_batch": "4",
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


def test_the_decode_tab_checks_and_measures() -> None:
    at = open_tab("Decode", {"hd_tmax": "2048", "hd_tdm": "64", "hd_step": "10"})
    m = metrics(at)
    assert m["Keys and values in the cache"] == "11 tokens"
    assert float(m["Token-by-token vs full causal"].split("≤")[1]) < 1e-5
    assert m["Slope with a cache"] != "–"
    assert any("Measured at" in c.value for c in at.caption)
    at.button(key="hd_measure").click().run()
    assert not at.exception


def test_the_url_keeps_the_view_and_restores_it() -> None:
    at = open_tab("KV-cache calculator")
    at.selectbox(key="hd_model").set_value("Mistral-7B")
    at.select_slider(key="hd_ctx").set_value(32768)
    at.number_input(key="hd_batch").set_value(8)
    at.toggle(key="hd_weights").set_value(False)
    at.run()
    wanted = {"hd_tab": "KV-cache calculator", "hd_model": "Mistral-7B", "hd_ctx": "32768", "hd_batch": "8",
              "hd_weights": "0"}  # fmt: skip
    assert {k: qp(at, k) for k in wanted} == wanted
    again = open_link(wanted)
    assert not again.exception
    assert again.selectbox(key="hd_model").value == "Mistral-7B"
    assert again.select_slider(key="hd_ctx").value == 32768
    assert again.number_input(key="hd_batch").value == 8
    assert again.toggle(key="hd_weights").value is False


@pytest.mark.parametrize(
    "query",
    [
        {"hd_tab": "<script>x</script>", "hd_h": "1e9", "hd_dm": "-5", "hd_kv": "zero"},
        {"hd_tab": "Decode", "hd_tmax": "999999999", "hd_tdm": "nan", "hd_step": "-3", "hd_dhead": "99"},
        {
            "hd_tab": "KV-cache calculator",
            "hd_model": "GPT-5",
            "hd_ctx": "3",
            "hd_batch": "1e6",
            "hd_gpu": "9000",
            "hd_dtype": "float8",
        },
        {"hd_tab": "MHA → GQA → MQA", "hd_h": "3", "hd_kv": "7", "hd_seed": "-1"},
    ],
)
def test_a_tampered_link_is_clamped_and_explained(query: dict[str, str]) -> None:
    at = open_link(query)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    notice = "\n".join(i.value for i in at.info)
    assert "This link asked for settings" in notice and "<script>" not in notice
    assert at.session_state["hd_tab"] in TABS
    assert at.session_state["hd_h"] in (1, 2, 4, 8) and at.session_state["hd_dm"] in (16, 32, 64)


def test_talk_mode_keeps_formulas_and_figures_and_drops_the_prose() -> None:
    for tab in ("Split", "MHA → GQA → MQA", "KV-cache calculator"):
        normal, talk = open_tab(tab), open_tab(tab, {"talk": "1"})
        assert len(talk.latex) == len(normal.latex) >= 1
        assert len(talk.get("plotly_chart")) == len(normal.get("plotly_chart"))
        assert len(talk.markdown) < len(normal.markdown)


def test_shared_controls_are_disabled_on_the_calculator() -> None:
    at = open_tab("KV-cache calculator")
    assert at.select_slider(key="hd_dm").disabled and at.number_input(key="hd_seed").disabled
    at = open_tab("Split")
    assert not at.select_slider(key="hd_h").disabled
