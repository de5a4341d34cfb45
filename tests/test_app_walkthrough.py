"""AppTest of the walkthrough: every preset × mask × step, every view, bad links, URL state."""

from __future__ import annotations

import base64
import itertools
import json

import numpy as np
import pytest
import torch
from conftest import open_app_page
from streamlit.testing.v1 import AppTest

from attention_core.presets import PRESETS
from attention_core.walkthrough import MASK_KINDS, run_walkthrough
from tests.support.shown import text as text_of


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = open_app_page("walkthrough", query)
    assert not at.exception, at.exception
    return at


def shown_numbers(at: AppTest) -> str:
    """Every metric value and dataframe cell: where a bare NaN would show."""
    parts = [str(m.value) for m in at.metric]
    parts += [df.value.to_string() for df in at.dataframe]
    return "\n".join(parts)


def heatmap_values(spec: str) -> np.ndarray:
    """The numbers of a chart's first heatmap, from the JSON the page sends (plotly packs arrays in base64)."""
    z = json.loads(spec)["data"][0]["z"]
    if isinstance(z, dict):
        flat = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).copy()
        return flat.reshape([int(n) for n in str(z["shape"]).split(",")])
    return np.asarray(z, dtype=float)


def shown_text(at: AppTest) -> str:
    return text_of(at) + "\n" + shown_numbers(at)


# A trained encoder or decoder has self-attention only: (model, cross) shows a message, tested in
# test_app_model.py, and so does (decoder, cross), in test_app_decoder.py.
PAIRS = [(p, m) for p, m in itertools.product(PRESETS, MASK_KINDS) if (p, m) not in (("model", "cross"),
                                                                                      ("decoder", "cross"))]


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
    at.button(key="wt_prev").click().run()
    assert at.session_state["step"] == 4
    assert "nan" not in shown_numbers(at).lower()


@pytest.mark.parametrize("view", ["all", "query", "compare"])
@pytest.mark.parametrize("preset", PRESETS)
def test_every_view_renders(view: str, preset: str) -> None:
    at = open_page()
    at.selectbox(key="preset").set_value(preset).run()
    at.selectbox(key="mask").set_value("causal").run()
    at.button_group(key="view").set_value(view).run()
    assert not at.exception, at.exception
    assert (at.session_state["view"], at.session_state["preset"], at.session_state["mask"]) == (view, preset, "causal")
    assert not at.exception


def test_one_query_reading_matches_the_core() -> None:
    at = open_page({"preset": "Sentence", "view": "One query"})
    result = run_walkthrough("sentence", d_model=8, d_k=4, d_v=4, positions=False)
    tokens = result.inputs.query_tokens
    assert at.session_state["q"] == tokens.index("it")
    row = result.trace.weights[tokens.index("it")]
    j = int(torch.argmax(row))
    headline = next(m.value for m in at.markdown if m.value.startswith("####"))
    assert f"{float(row[j]):.0%}" in headline and result.inputs.key_tokens[j] in headline


def test_fully_masked_rows_are_explained_not_nan() -> None:
    at = open_page({"mask": "Padding", "pad": "3", "step": "4"})
    text = shown_text(at)
    assert "Every key is masked" in text
    assert "nan" not in shown_numbers(at).lower()
    assert "all rows masked" in text


def test_scaling_off_and_dropout_paths() -> None:
    at = open_page({"preset": "Random", "scaled": "false", "step": "2", "drop": "0.3"})
    assert "scaling off" in at.latex[0].value
    at.button(key="wt_next").click().run()
    at.button(key="wt_next").click().run()
    assert any("Dropout p = 0.3" in m.value for m in at.markdown)


def test_random_size_controls_reach_the_core() -> None:
    at = open_page({"preset": "Random"})
    for key, value in (("n", 16), ("d_model", 64), ("d_k", 1), ("d_v", 64), ("seed", 9999)):
        widget = at.number_input(key=key) if key == "seed" else at.slider(key=key)
        widget.set_value(value).run()
        assert not at.exception
        assert at.session_state[key] == value
    assert any("X: 16×64 → Q: 16×1, K: 16×1, V: 16×64" in m.value for m in at.markdown)


def test_malformed_link_falls_back_to_defaults_with_a_notice() -> None:
    at = open_page({"n": "1000000000", "d_k": "-3", "mask": "<script>", "zzz": "1", "preset": "Random"})
    assert (at.session_state["n"], at.session_state["d_k"], at.session_state["mask"]) == (6, 4, "none")
    assert at.session_state["preset"] == "random"  # a good value beside bad ones is kept
    notice = at.info[0].value
    assert notice.startswith("This link asked for")
    for key in ("n =", "d_k =", "mask ="):
        assert key in notice
    assert "<" not in notice and ">" not in notice
    assert "preset" not in notice and "zzz" not in notice  # kept and unknown keys are not complained about


def test_a_link_in_todays_form_restores_the_view() -> None:
    """What the browser writes for a chosen view (tests/test_browser.py checks the writing itself)."""
    link = {"preset": "Sentence", "mask": "Causal", "step": "1", "d_k": "8", "talk": "true"}
    at = open_page(link)
    assert (at.session_state["preset"], at.session_state["mask"], at.session_state["step"]) == ("sentence", "causal", 1)
    assert at.session_state["d_k"] == 8 and at.toggle(key="talk").value
    assert at.subheader[0].value == "1. Scores QKᵀ"
    assert not at.info  # nothing to complain about


def test_a_bookmark_from_before_bound_widgets_opens_the_same_view() -> None:
    """Old links wrote on/off as 1/0 and choices by their code; they are rewritten once and open as before."""
    at = open_page({"preset": "sentence", "mask": "causal", "scaled": "0", "talk": "1", "view": "query", "q": "3"})
    s = at.session_state
    assert (s["preset"], s["mask"], s["scaled"], s["talk"], s["view"], s["q"]) == (
        "sentence", "causal", False, True, "query", 3
    )  # fmt: skip
    assert at.query_params["q"] in ("cross", ["cross"])  # token 3 of the sentence, now named in the link
    assert not at.info


def test_talk_mode_hides_prose_but_keeps_the_formula() -> None:
    normal = open_page({"step": "2"})
    talk = open_page({"step": "2", "talk": "true"})
    assert talk.latex and talk.latex[0].value == normal.latex[0].value
    assert len(talk.markdown) < len(normal.markdown)


def test_expanders_render_their_content_only_when_open() -> None:
    at = open_page({"preset": "Sentence", "mask": "Causal"})
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


def test_the_backward_view_shows_the_gradients_autograd_gives() -> None:
    """Every matrix of the Backward view against torch's autograd on the same inputs and dO."""
    at = open_page({"preset": "Sentence", "mask": "Causal", "view": "Backward", "upstream": "All ones"})
    shown = {c.proto.id.rsplit("-", 1)[-1]: heatmap_values(c.proto.spec) for c in at.get("plotly_chart")}
    inp = run_walkthrough("sentence", d_model=8, d_k=4, d_v=4, mask="causal", positions=False).inputs
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (inp.q, inp.k, inp.v))
    out = torch.softmax((q @ k.T / 2.0).masked_fill(torch.ones(11, 11).triu(1).bool(), float("-inf")), -1) @ v
    out.backward(torch.ones_like(out))  # dO = all ones, as chosen
    for name, ref in (("wt_back_grad_v", v.grad), ("wt_back_grad_q", q.grad), ("wt_back_grad_k", k.grad)):
        assert torch.allclose(torch.as_tensor(shown[name], dtype=torch.float32), ref, atol=1e-5), name
    assert any("vs torch autograd" in c.value for c in at.caption)


def test_a_default_named_in_the_link_is_no_complaint() -> None:
    """The link drops a default, so naming one (by today's label or yesterday's code) must not read as an error."""
    for link in ({"mask": "No mask", "view": "Step by step", "step": "0"}, {"mask": "none", "preset": "tiny"}):
        at = open_page(link)
        assert not at.info, (link, [i.value for i in at.info])
        assert (at.session_state["mask"], at.session_state["step"]) == ("none", 0)
