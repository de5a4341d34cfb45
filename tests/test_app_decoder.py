"""AppTest of the decoder page (gemma-3-270m): every tab and control, bad prompts, links, talk mode, and the numbers
the page names checked against the model run directly here (not through the page's caches).

The model is loaded once per test process (the page's ``st.cache_resource`` and the fixture below share nothing, so
this module pays for two loads at most). Generation is kept to a few tokens.
"""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pytest
import torch

from attention_core.decoder import generate, load_decoder, run_decoder
from attention_core.kv_cache import kv_cache_bytes
from figures.decoder import token_label
from tests.support.shown import charts, metrics, notice, opened, page_links
from tests.support.shown import text as text_of
from ui.decoder.controls import GLOBAL_LAYERS, N_HEADS, N_LAYERS
from ui.decoder.prompts import EXAMPLES, LONG, LONG_NAME, OWN
from ui.decoder.reading import HEAD_DIM, WINDOW

open_page = partial(opened, "decoder")
CAPITAL = EXAMPLES["Capital"]
TABS = ("Next token", "Write", "Every head", "Shared K/V", "Local & global", "Sinks")


@pytest.fixture(scope="module")
def model():
    return load_decoder()


def test_the_controls_match_the_model(model) -> None:
    cfg = model.config
    assert (cfg.n_layers, cfg.n_heads, cfg.n_kv_heads) == (N_LAYERS, N_HEADS, 1)
    assert tuple(i for i in range(cfg.n_layers) if cfg.is_global(i)) == GLOBAL_LAYERS
    assert (cfg.head_dim, cfg.window) == (HEAD_DIM, WINDOW)
    assert 512 < len(model.tokenizer.encode(LONG)) <= cfg.max_tokens  # the long preset is past the window


def test_the_default_shows_the_models_next_token_probabilities(model) -> None:
    at = open_page()
    assert at.session_state["dc_ex"] == "Capital" and at.session_state["dc_text"] == CAPITAL
    assert "Gemma terms of use" in text_of(at) and "https://ai.google.dev/gemma/terms" in text_of(at)
    probs = torch.softmax(run_decoder(model, CAPITAL).logits[-1].double(), -1)  # computed here, at T = 1
    top = probs.topk(10)
    m = metrics(at)
    assert m["Most likely next"] == token_label(model.tokenizer.token_strings([int(top.indices[0])])[0], 20)
    assert f"{float(top.values[0]):.1%}" in text_of(at)
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert bars["text"] == [f"{float(p):.1%}" for p in top.values]  # the ten bars, most likely first
    assert len(charts(at)) == 1


def test_temperature_zero_is_greedy_and_two_flattens() -> None:
    at = open_page()
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    at.slider(key="dc_temp").set_value(0.0).run()
    assert metrics(at)["Entropy"] == "0.00 bits" and "greedy" in text_of(at)
    greedy = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert greedy["y"] == bars["y"]  # the same candidates, in the same order: all the weight on the first
    assert greedy["text"] == ["100.0%"] + ["0.0%"] * 9
    hot = float(open_page({"dc_temp": "2"}).metric[1].value.split()[0])
    warm = float(open_page().metric[1].value.split()[0])
    assert hot > warm > 0
    for k in (5, 20):
        at.select_slider(key="dc_k").set_value(k).run()
        assert not at.exception and f"The {k} bars hold" in text_of(at)


def test_every_example_sets_the_prompt_and_typing_makes_it_your_own() -> None:
    at = open_page()
    for name in ("Story", "Code", "Counting", "Capital"):
        at.selectbox(key="dc_ex").set_value(name).run()
        assert not at.exception and at.session_state["dc_text"] == EXAMPLES[name]
    at.text_area(key="dc_text").set_value("Once upon a time").run()
    assert at.session_state["dc_ex"] == OWN and "tokens:** `<bos>`" in text_of(at)


@pytest.mark.parametrize(("text", "message"), [("", "empty"), ("   ", "empty"), ("a " * 1100, "cap here is 1024")])
def test_bad_prompts_get_a_sentence_not_a_traceback(text: str, message: str) -> None:
    at = open_page()
    at.text_area(key="dc_text").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1 and message in at.error[0].value
    at.selectbox(key="dc_ex").set_value("Story").run()  # and the page recovers
    assert not at.error and not at.exception


def test_every_tab_renders_on_a_short_prompt() -> None:
    for tab in TABS:
        at = open_page({"dc_tab": tab})
        assert not at.error and len(charts(at)) >= (0 if tab == "Write" else 1), tab


def test_every_head_builds_the_walkthrough_link_and_the_walkthrough_shows_that_head(model) -> None:
    at = open_page({"dc_tab": "Every head"})
    at.selectbox(key="dc_layer").set_value(11).run()
    at.selectbox(key="dc_head").set_value(3).run()
    (label, query), *_ = page_links(at)
    assert "L11·H3" in label
    assert query == {"preset": ["Gemma decoder"], "mask": ["Causal"], "text": [CAPITAL], "dlayer": ["11"],
                     "dhead": ["3"]}  # fmt: skip
    walk = opened("walkthrough", {k: v[0] for k, v in query.items()} | {"view": "One query"})
    assert not walk.exception, [e.value for e in walk.exception]
    s = walk.session_state
    assert (s["preset"], s["mask"], s["dlayer"], s["dhead"]) == ("decoder", "causal", 11, 3)
    assert not notice(walk) and "gemma-3-270m, layer 11 (global" in text_of(walk)
    row = run_decoder(model, CAPITAL).attentions[11].weights[0, 3, -1]  # the last token's row, from the forward
    walk.selectbox(key="q").set_value(len(row) - 1).run()
    headline = next(m.value for m in walk.markdown if m.value.startswith("####"))
    assert f"takes {float(row.max()):.0%} of its value" in headline
    walk.selectbox(key="mask").set_value("cross").run()  # a decoder has no cross-attention: a sentence
    assert not walk.exception and "no cross-attention" in walk.error[0].value


def test_a_prompt_too_long_for_the_walkthrough_says_so_instead_of_linking() -> None:
    at = open_page({"dc_tab": "Every head", "dc_ex": LONG_NAME})
    assert not [label for label, _ in page_links(at) if "walkthrough" in label]
    assert "up to 128 tokens" in text_of(at)


def test_shared_kv_shows_four_heads_and_the_cache_of_one_kv_head_against_four(model) -> None:
    at = open_page({"dc_tab": "Shared K/V", "dc_layer": "3"})
    n = len(model.tokenizer.encode(CAPITAL))
    m = metrics(at)
    one, four = kv_cache_bytes(18, 1, 256, n, 1, "bfloat16"), kv_cache_bytes(18, 4, 256, n, 1, "bfloat16")
    assert four == 4 * one == 4 * 2 * 18 * 256 * n * 2
    from attention_core.device import format_bytes

    assert m["One K/V head (the model)"] == format_bytes(one) and m["One K/V per query head"] == format_bytes(four)
    kv = [json.loads(c.proto.spec) for c in at.get("plotly_chart")[:4]]  # the query heads, one chart each
    assert [t["type"] for f in kv for t in f["data"]] == ["heatmap"] * 4
    assert [f["layout"]["title"]["text"] for f in kv] == [f"query head {h}" for h in range(4)]
    (label, query), *_ = page_links(at)
    assert "KV-cache calculator" in label and query == {"hd_tab": ["KV-cache calculator"]}


def test_a_short_prompt_offers_the_long_diary_and_the_window_changes_nothing_there() -> None:
    at = open_page({"dc_tab": "Local & global", "dc_nowin": "true"})
    assert "no more than the window" in text_of(at) and "changes nothing" in text_of(at)
    at.button(key="dc_uselong").click().run()
    assert at.session_state["dc_ex"] == LONG_NAME and at.session_state["dc_text"] == LONG


@pytest.mark.slow
def test_switching_the_window_off_on_the_long_diary_moves_the_next_token(model) -> None:
    at = open_page({"dc_tab": "Local & global", "dc_ex": LONG_NAME, "dc_local": "10"})
    assert not at.error and "no more than the window" not in text_of(at)
    at.toggle(key="dc_nowin").set_value(True).run()
    assert not at.exception
    p = torch.softmax(run_decoder(model, LONG).logits[-1].double(), -1)
    q = torch.softmax(run_decoder(model, LONG, sliding_window=False).logits[-1].double(), -1)
    assert metrics(at)["Probability moved"] == f"{float(0.5 * (p - q).abs().sum()):.1%}"
    assert metrics(at)["Most likely token"] == ("unchanged" if int(p.argmax()) == int(q.argmax()) else "changed")


def test_sinks_report_each_layers_share_on_the_first_token(model) -> None:
    at = open_page({"dc_tab": "Sinks", "dc_ex": "Story"})
    run = run_decoder(model, EXAMPLES["Story"])
    w = torch.stack([a.weights[0] for a in run.attentions])  # (18, 4, n, n); n < 512, so every row sees token 0
    shares = w[:, :, 1:, 0].mean(-1)  # (18, 4): rows after the first
    glob = list(GLOBAL_LAYERS)
    local = [i for i in range(18) if i not in glob]
    text = text_of(at)
    assert f"**{float(shares[local].mean()):.0%}** of their attention" in text
    assert f"the global layers **{float(shares[glob].mean()):.0%}**" in text
    layer, head = divmod(int(shares.argmax()), 4)
    assert f"**L{layer}·H{head}** with {float(shares.max()):.2f}" in text
    assert "[CLS]" in text and "[SEP]" in text


def test_writing_shows_the_models_own_tokens_and_times_each_one(model) -> None:
    at = open_page({"dc_tab": "Write", "dc_new": "3", "dc_temp": "0"})
    assert at.number_input(key="dc_seed").disabled  # greedy needs no seed
    at.button(key="dc_write").click().run()
    assert not at.exception, [e.value for e in at.exception]
    expected = "".join(s.token for s in generate(model, CAPITAL, 3))
    g = at.session_state["dc_written"]
    assert "".join(g.tokens) == expected and g.done and len(g.seconds) == 3
    assert "3 tokens written, greedy" in text_of(at)
    assert {"Per token, median", "First token", "Context at the end"} <= set(metrics(at))
    assert [r.shape[-1] for r in g.rows] == [len(g.prompt_tokens) + i for i in range(3)]
    at.selectbox(key="dc_layer").set_value(17).run()  # another head's rows: no new generation
    assert at.session_state["dc_written"] is not None and not at.exception
    at.button(key="dc_stop").click().run()
    assert not at.exception and len(at.session_state["dc_written"].tokens) == 3


def test_sampling_is_seeded() -> None:
    at = open_page({"dc_tab": "Write", "dc_new": "2", "dc_temp": "1.5", "dc_seed": "7"})
    at.button(key="dc_write").click().run()
    first = list(at.session_state["dc_written"].tokens)
    at.button(key="dc_write").click().run()
    assert at.session_state["dc_written"].tokens == first and len(first) == 2


def test_talk_mode_folds_the_prompt_and_keeps_the_figure() -> None:
    at = open_page({"talk": "true", "dc_tab": "Every head"})
    assert not at.title and len(charts(at)) == 1
    assert "Gemma terms of use" in text_of(at)


def test_bad_values_in_a_link_fall_back_with_a_notice() -> None:
    at = open_page({"dc_layer": "99", "dc_head": "x", "dc_ex": "<script>", "dc_tab": "Every head", "dc_temp": "9"})
    assert not at.exception
    text = notice(at)
    assert text and "<script>" not in text
    for key in ("dc_layer", "dc_head", "dc_ex"):
        assert f"{key} =" in text
    s = at.session_state
    assert (s["dc_layer"], s["dc_head"], s["dc_ex"]) == (5, 0, "Capital")


def test_a_link_naming_an_example_alone_opens_its_prompt() -> None:
    at = open_page({"dc_ex": "Code"})
    assert at.session_state["dc_text"] == EXAMPLES["Code"] and not notice(at)
    at = open_page({"dc_ex": OWN, "dc_text": "Dogs bark at night."})
    assert at.session_state["dc_text"] == "Dogs bark at night." and not notice(at)


def test_the_snippet_reproduces_the_shown_probabilities(model) -> None:
    at = open_page()
    assert not [c for c in at.code if c.language == "python"]  # built only when its expander opens
    at.session_state["dc_code"] = True  # as if the viewer opened it
    code = next(c.value for c in at.run().code if c.language == "python")
    assert repr(CAPITAL) in code and "temperature=1" in code and "run.attentions[5]" in code
    printed: list[str] = []
    namespace = {"print": lambda *a, **k: printed.append(" ".join(map(str, a))), "load_decoder": lambda: model}
    exec(code.replace("from attention_core.decoder import load_decoder, run_decoder",
                      "from attention_core.decoder import run_decoder"), namespace)  # fmt: skip
    probs = torch.softmax(run_decoder(model, CAPITAL).logits[-1].double(), -1)
    assert f"{float(probs.max()):.4f}" in printed[1]
    assert np.isclose(float(printed[1].split()[-1]), float(probs.max()), atol=1e-4)


def test_the_walkthroughs_decoder_snippet_reproduces_the_heads_weights(model) -> None:
    from ui.decoder.snippet import decoder_head_snippet

    code = decoder_head_snippet(CAPITAL, 11, 2)
    namespace: dict[str, object] = {"print": lambda *a, **k: None, "load_decoder": lambda: model}
    exec(code.replace("from attention_core.decoder import head_inputs, load_decoder",
                      "from attention_core.decoder import head_inputs"), namespace)  # fmt: skip
    expected = run_decoder(model, CAPITAL).attentions[11].weights[0, 2]  # from the forward, not from head_inputs
    # The forward runs in bfloat16; the snippet redoes the five steps in float32 from the same Q, K, V: they
    # agree to bfloat16's resolution (2⁻⁸ relative), not to float32's.
    shown = namespace["weights"]
    assert torch.allclose(shown, expected.to(shown.dtype), atol=2**-8)  # type: ignore[union-attr, arg-type]


def test_the_snippet_takes_the_links_values_while_their_tab_is_closed() -> None:
    at = open_page({"dc_tab": "Sinks", "dc_temp": "0.5", "dc_layer": "11", "dc_head": "2"})
    at.session_state["dc_code"] = True
    code = next(c.value for c in at.run().code if c.language == "python")
    assert "temperature=0.5" in code and "run.attentions[11]" in code and "weights[0, 2]" in code
