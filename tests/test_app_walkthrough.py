"""AppTest of the walkthrough: every preset × mask × step, every view, bad links, URL state."""

from __future__ import annotations

import itertools

import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_core.presets import PRESETS
from attention_core.walkthrough import MASK_KINDS, run_walkthrough

PAGE = "pages/walkthrough.py"


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file("../app.py", default_timeout=60)
    if query:
        at.query_params.update(query)
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, at.exception
    return at


def shown_numbers(at: AppTest) -> str:
    """Every metric value and dataframe cell: where a bare NaN would show."""
    parts = [str(m.value) for m in at.metric]
    parts += [df.value.to_string() for df in at.dataframe]
    return "\n".join(parts)


def shown_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [m.value for m in at.caption] + [m.value for m in at.metric]
    parts += [w.value for w in at.warning] + [w.value for w in at.info] + [e.value for e in at.error]
    return "\n".join(str(p) for p in parts)


# A trained encoder has self-attention only: (model, cross) shows a message, tested in test_app_model.py.
PAIRS = [(p, m) for p, m in itertools.product(PRESETS, MASK_KINDS) if (p, m) != ("model", "cross")]


@pytest.mark.parametrize(("preset", "mask"), PAIRS)
def test_next_steps_through_every_step(preset: str, mask: str) -> None:
    at = open_page()
    at.selectbox(key="preset").set_value(preset).run()
    at.selectbox(key="mask").set_value(mask).run()
    seen = [at.session_state["step"]]
    for _ in range(5):
        at.button(key="wt_next").click().run()
        assert not at.exception, at.exception
        seen.append(at.session_state["step"])
        assert at.subheader[0].value.startswith(f"{seen[-1]}. ")
    assert seen == [0, 1, 2, 3, 4, 5]
    assert at.button(key="wt_next").disabled
    assert at.query_params["step"] == ["5"] or at.query_params["step"] == "5"
    at.button(key="wt_prev").click().run()
    assert at.session_state["step"] == 4
    assert "nan" not in shown_numbers(at).lower()


@pytest.mark.parametrize("view", ["all", "query", "compare"])
@pytest.mark.parametrize("preset", PRESETS)
def test_every_view_renders(view: str, preset: str) -> None:
    at = open_page({"preset": preset, "view": view, "mask": "causal"})
    assert at.session_state["view"] == view
    assert not at.exception


def test_one_query_reading_matches_the_core() -> None:
    at = open_page({"preset": "sentence", "view": "query"})
    result = run_walkthrough("sentence", d_model=8, d_k=4, d_v=4, positions=False)
    tokens = result.inputs.query_tokens
    assert at.session_state["q"] == tokens.index("it")
    row = result.trace.weights[tokens.index("it")]
    j = int(torch.argmax(row))
    headline = next(m.value for m in at.markdown if m.value.startswith("####"))
    assert f"{float(row[j]):.0%}" in headline and result.inputs.key_tokens[j] in headline


def test_fully_masked_rows_are_explained_not_nan() -> None:
    at = open_page({"preset": "tiny", "mask": "padding", "pad": "3", "step": "4"})
    text = shown_text(at)
    assert "Every key is masked" in text
    assert "nan" not in shown_numbers(at).lower()
    assert "all rows masked" in text


def test_scaling_off_and_dropout_paths() -> None:
    at = open_page({"preset": "random", "scaled": "0", "step": "2", "drop": "0.3"})
    assert "scaling off" in at.latex[0].value
    at.button(key="wt_next").click().run()
    at.button(key="wt_next").click().run()
    assert any("Dropout p = 0.3" in m.value for m in at.markdown)


def test_random_size_controls_reach_the_core() -> None:
    at = open_page({"preset": "random"})
    for key, value in (("n", 16), ("d_model", 64), ("d_k", 1), ("d_v", 64), ("seed", 9999)):
        widget = at.number_input(key=key) if key == "seed" else at.slider(key=key)
        widget.set_value(value).run()
        assert not at.exception
        assert at.session_state[key] == value
    assert at.query_params["n"] in ("16", ["16"])


def test_malformed_link_is_clamped_with_a_notice() -> None:
    at = open_page({"n": "1000000000", "d_k": "-3", "mask": "<script>", "zzz": "1", "preset": "random"})
    assert at.session_state["n"] == 16
    assert at.session_state["d_k"] == 1
    assert at.session_state["mask"] == "none"
    notice = at.info[0].value
    assert notice.startswith("This link asked for")
    assert "<" not in notice and ">" not in notice
    assert "zzz" not in at.query_params


def test_link_round_trip_restores_the_view() -> None:
    at = open_page()
    at.selectbox(key="preset").set_value("sentence").run()
    at.selectbox(key="mask").set_value("causal").run()
    at.button(key="wt_next").click().run()
    query = {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert query["preset"] == "sentence" and query["mask"] == "causal" and query["step"] == "1"
    again = open_page(query)
    for key in ("preset", "mask", "step", "d_k"):
        assert again.session_state[key] == at.session_state[key]
    assert [h.value for h in again.subheader] == [h.value for h in at.subheader]


def test_talk_mode_hides_prose_but_keeps_the_formula() -> None:
    normal = open_page({"step": "2"})
    talk = open_page({"step": "2", "talk": "1"})
    assert talk.latex and talk.latex[0].value == normal.latex[0].value
    assert len(talk.markdown) < len(normal.markdown)


def test_expanders_render_their_content_only_when_open() -> None:
    at = open_page({"preset": "sentence", "mask": "causal"})
    charts_closed = len(at.get("plotly_chart"))
    assert not any("import torch" in c.value for c in at.code)
    for key in ("wt_code", "wt_masks", "wt_xw"):
        at.session_state[key] = True  # as if the viewer opened it
    at.run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == charts_closed + 4  # X, W_Q, W_K, W_V
    snippet = next(c.value for c in at.code if "import torch" in c.value)
    namespace: dict[str, object] = {}
    exec(snippet, namespace)  # the copyable snippet reproduces the weights the page shows
    expected = run_walkthrough("sentence", d_model=8, d_k=4, d_v=4, mask="causal", positions=False).trace.weights
    assert torch.allclose(namespace["weights"], expected, atol=1e-5)  # type: ignore[arg-type]
    table = at.dataframe[0].value
    assert "causal" in table["mask"].tolist()
