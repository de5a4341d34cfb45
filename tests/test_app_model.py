"""AppTest of the Real attention page: every control, bad sentences, URL state, talk mode, and the
numbers it names checked against the model's weights computed directly (not through the page)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_core.bert import encode, load_bert

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(query or {})  # the frame (talk mode) reads its part on the first run
    at.run()  # AppTest knows the navigation's pages only after a first run
    at.switch_page("pages/model.py")
    at.query_params.clear()
    at.query_params.update(query or {})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def qp(at: AppTest, key: str) -> str | None:
    value = at.query_params.get(key)
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def text_of(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [m.value for m in at.caption]
    parts += [w.value for w in at.warning] + [e.value for e in at.error] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def page_links(at: AppTest) -> list[tuple[str, dict[str, list[str]]]]:
    links = [el for el in at.main if getattr(el, "type", "") == "page_link"]
    return [(el.proto.label, parse_qs(el.proto.query_string)) for el in links]


@pytest.fixture(scope="module")
def bert():
    return load_bert(device="cpu")


def test_the_default_opens_on_the_tired_sentence_with_it_chosen() -> None:
    at = open_page()
    assert at.session_state["md_text"] == TIRED
    tokens = ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it", "was", "too",
              "tired", ".", "[SEP]"]  # fmt: skip
    assert at.session_state["md_tok"] == tokens.index("it")
    assert "Who does `it` look at?" in text_of(at)
    assert len([c for c in at.main if getattr(c, "type", "") == "plotly_chart"]) == 5  # grid, token, 3 maps


def test_every_example_sets_the_sentence_and_typing_switches_to_your_own() -> None:
    at = open_page()
    for option in ("wide", "trophy", "keys", "tired"):
        at.selectbox(key="md_ex").set_value(option).run()
        assert not at.exception
        assert at.session_state["md_text"].startswith(("The animal", "The trophy", "The keys"))
    at.text_input(key="md_text").set_value("The cat sat on the mat because it was warm.").run()
    assert at.session_state["md_ex"] == "own"
    assert qp(at, "md_text") == "The cat sat on the mat because it was warm."
    at.selectbox(key="md_ex").set_value("own").run()
    assert at.session_state["md_text"] == "The cat sat on the mat because it was warm."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("a " * 200, "at most 128"),  # 400 characters (the box takes 500), 202 tokens
        ("\u200b\u200b", "no token is left"),
    ],
)
def test_bad_sentences_get_a_message_not_a_traceback(text: str, message: str) -> None:
    at = open_page()
    at.text_input(key="md_text").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1 and message in at.error[0].value
    at.selectbox(key="md_ex").set_value("wide").run()  # and the page recovers
    assert not at.error and not at.exception


def test_unknown_characters_are_named() -> None:
    at = open_page()
    at.text_input(key="md_text").set_value("My parrot 🦜 likes it.").run()
    assert not at.exception
    assert len(at.warning) == 1 and "🦜" in at.warning[0].value and "[UNK]" in at.warning[0].value


def test_layer_and_head_build_the_walkthrough_link() -> None:
    at = open_page()
    at.selectbox(key="md_layer").set_value(5).run()
    at.selectbox(key="md_head").set_value(11).run()
    (label, query), = page_links(at)
    assert "L5·H11" in label
    assert query == {"preset": ["model"], "text": [TIRED], "layer": ["5"], "head": ["11"]}
    assert qp(at, "md_layer") == "5" and qp(at, "md_head") == "11"


def test_choosing_a_token_redraws_its_row_and_names_its_strongest_links(bert) -> None:
    at = open_page()
    _, out = encode(bert, [TIRED])
    w = torch.stack([a.weights[0] for a in out.attentions])  # (6, 12, L, L), computed here, not by the page
    for tok in (2, 8, 13):  # animal, street, tired
        at.selectbox(key="md_tok").set_value(tok).run()
        assert not at.exception
        links = next(m.value for m in at.markdown if m.value.startswith("**Strongest links"))
        n = w.shape[-1]
        keys = [j for j in range(1, n - 1) if j != tok]
        best = w[:, :, tok, keys].amax(-1)  # (6, 12)
        layer, head = divmod(int(best.argmax()), 12)
        assert links.split(":** ", 1)[1].startswith(f"L{layer}·H{head} gives"), links
        assert f"{float(best.max()):.2f}" in links
        assert qp(at, "md_tok") == str(tok)


def test_the_pair_section_reports_the_models_own_numbers(bert) -> None:
    at = open_page()
    rows = {}
    for text in (TIRED, WIDE):
        batch, out = encode(bert, [text])
        tokens = batch.items[0].tokens
        w = torch.stack([a.weights[0] for a in out.attentions])[:, :, tokens.index("it")]  # (6, 12, L)
        rows[text] = (w[..., tokens.index("animal")], w[..., tokens.index("street")])
    (ta, ts), (wa, ws) = rows[TIRED], rows[WIDE]
    text = text_of(at)
    # The strongest "it" → "animal" head in the tired sentence, and what it does in the wide one.
    layer, head = divmod(int(ta.argmax()), 12)
    assert f"the strongest link, **L{layer}·H{head}**, gives “animal” {float(ta.max()):.2f}" in text
    assert f"({float(wa[layer, head]):.2f}) to “street” ({float(ws[layer, head]):.2f})" in text
    both_right = int(((ta > ts) & (ws > wa)).sum())
    assert f"{both_right} of 72 heads put more of “it” on the right noun in **both** sentences" in text
    assert f"{int((ta > ts).sum())} of 72 pick “animal” in the tired sentence, only {int((ws > wa).sum())}" in text
    assert f"gives street {float(ws.mean()):.3f} and animal {float(wa.mean()):.3f}" in text
    best = float(torch.minimum(ta - ts, ws - wa).max())  # the best head's smaller lead
    assert (f"All by small margins (at most {best:.2f})" in text) == (0 < best < 0.1)


def test_a_link_naming_only_an_example_shows_that_example() -> None:
    at = open_page({"md_ex": "wide"})
    assert at.session_state["md_ex"] == "wide" and at.session_state["md_text"] == WIDE
    assert qp(at, "md_ex") == "wide"


def test_a_link_restores_the_view_and_bad_values_get_a_notice() -> None:
    at = open_page({"md_text": "Dogs bark at night.", "md_layer": "2", "md_head": "7", "md_tok": "1"})
    assert at.session_state["md_ex"] == "own"
    assert at.session_state["md_layer"] == 2 and at.session_state["md_head"] == 7
    assert "Who does `dogs` look at?" in text_of(at)
    at = open_page({"md_layer": "99", "md_head": "x", "md_ex": "<script>"})
    assert not at.exception
    notice = at.info[0].value
    assert notice.startswith("This link asked for") and "<script>" not in notice
    assert at.session_state["md_layer"] == 5 and at.session_state["md_head"] == 1


def test_talk_mode_folds_the_controls_and_keeps_the_figures() -> None:
    at = open_page({"talk": "1"})
    assert not at.title  # the title goes in talk mode, as on the other pages
    assert len([c for c in at.main if getattr(c, "type", "") == "plotly_chart"]) == 5
    assert qp(at, "talk") == "1"
    (_, query), = page_links(at)
    assert query["talk"] == ["1"]


def test_the_walkthrough_opens_a_head_with_its_real_weights(bert) -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/walkthrough.py")
    at.query_params.clear()
    at.query_params.update({"preset": "model", "text": TIRED, "layer": "3", "head": "1", "view": "query"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    _, out = encode(bert, [TIRED])
    row = out.attentions[3].weights[0, 1, 10]  # "it" is token 10
    headline = next(m.value for m in at.markdown if m.value.startswith("####"))
    assert headline.startswith(f"#### “it” takes {float(row[2]):.0%} of its value from “animal”")
    assert at.session_state["q"] == 10
    at.selectbox(key="mask").set_value("cross").run()  # an encoder has no cross-attention: a message
    assert not at.exception and "no cross-attention" in at.error[0].value


def test_the_reading_names_a_second_key_only_when_its_share_shows(bert) -> None:
    """“[CLS]” puts almost all of its weight on itself in layer 3, head 1: no “and 0% from …”."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/walkthrough.py")
    at.query_params.update({"preset": "model", "text": TIRED, "layer": "3", "head": "1", "view": "query"})
    at.run()
    _, out = encode(bert, [TIRED])
    branches = set()
    for q in (0, 10):  # [CLS], "it"
        at.selectbox(key="q").set_value(q).run()
        assert not at.exception, [e.value for e in at.exception]
        first, second = torch.topk(out.attentions[3].weights[0, 1, q], 2).values.tolist()
        headline = next(m.value for m in at.markdown if m.value.startswith("####"))
        assert f"takes {first:.0%} of its value" in headline
        shows_second = round(second * 100) > 0
        assert (f" and {second:.0%} from " in headline) == shows_second, headline
        branches.add(shows_second)
    assert branches == {True, False}  # both readings were exercised
