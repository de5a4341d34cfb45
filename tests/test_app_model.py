"""AppTest of the Real attention page: every control, bad sentences, links old and new, talk mode, and the
numbers it names checked against the model's weights computed directly (not through the page).

The browser writes the URL when a control changes, which AppTest does not show: tests/test_browser_model.py
checks that part.
"""

from __future__ import annotations

import pytest
import torch
from conftest import open_app_page
from streamlit.testing.v1 import AppTest

from attention_core.bert.encoder import encode, load_bert
from tests.support.shown import charts, notice, page_links
from tests.support.shown import text as text_of

TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."
TOKENS = ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it", "was", "too", "tired",
          ".", "[SEP]"]  # fmt: skip


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = open_app_page("model", query)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def bert():
    return load_bert(device="cpu")


def test_the_default_opens_on_the_tired_sentence_with_it_chosen() -> None:
    at = open_page()
    assert at.session_state["md_text"] == TIRED and at.session_state["md_ex"] == "Tired animal"
    assert at.session_state["md_tok"] == "10: it" == at.selectbox(key="md_tok").options[TOKENS.index("it")]
    assert "Who does `it` look at?" in text_of(at)
    assert len(charts(at)) == 5  # grid, token, 3 maps
    assert not notice(at)


def test_every_example_sets_the_sentence_and_typing_switches_to_your_own() -> None:
    at = open_page()
    for option in ("Wide street", "Trophy and suitcase", "Keys and cabinet", "Tired animal"):
        at.selectbox(key="md_ex").set_value(option).run()
        assert not at.exception
        assert at.session_state["md_text"].startswith(("The animal", "The trophy", "The keys"))
    at.selectbox(key="md_ex").set_value("Wide street").run()
    assert at.session_state["md_text"] == WIDE
    at.text_input(key="md_text").set_value("The cat sat on the mat because it was warm.").run()
    assert at.session_state["md_ex"] == "Your own sentence"
    at.selectbox(key="md_ex").set_value("Your own sentence").run()
    assert at.session_state["md_text"] == "The cat sat on the mat because it was warm."


def test_a_new_sentence_starts_the_token_picker_again_from_it() -> None:
    at = open_page()
    at.selectbox(key="md_tok").set_value("2: animal").run()
    assert "Who does `animal` look at?" in text_of(at)
    at.selectbox(key="md_ex").set_value("Trophy and suitcase").run()
    assert at.session_state["md_tok"].endswith(": it") and "Who does `it` look at?" in text_of(at)
    at.text_input(key="md_text").set_value("Dogs bark at night.").run()
    assert at.session_state["md_tok"] == "1: dogs"  # no "it": the first word


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
    at.selectbox(key="md_ex").set_value("Wide street").run()  # and the page recovers
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
    ((label, query),) = page_links(at)
    assert "L5·H11" in label
    assert query == {"preset": ["Trained model"], "text": [TIRED], "layer": ["5"], "head": ["11"]}
    assert len(charts(at)) == 5


def test_choosing_a_token_redraws_its_row_and_names_its_strongest_links(bert) -> None:
    at = open_page()
    _, out = encode(bert, [TIRED])
    w = torch.stack([a.weights[0] for a in out.attentions])  # (6, 12, L, L), computed here, not by the page
    for tok in (2, 8, 13):  # animal, street, tired
        at.selectbox(key="md_tok").set_value(f"{tok}: {TOKENS[tok]}").run()
        assert not at.exception
        assert f"Who does `{TOKENS[tok]}` look at?" in text_of(at)
        links = next(m.value for m in at.markdown if m.value.startswith("**Strongest links"))
        n = w.shape[-1]
        keys = [j for j in range(1, n - 1) if j != tok]
        best = w[:, :, tok, keys].amax(-1)  # (6, 12)
        layer, head = divmod(int(best.argmax()), 12)
        assert links.split(":** ", 1)[1].startswith(f"L{layer}·H{head} gives"), links
        assert f"{float(best.max()):.2f}" in links


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
    at = open_page({"md_ex": "Wide street"})
    assert at.session_state["md_ex"] == "Wide street" and at.session_state["md_text"] == WIDE
    assert at.query_params["md_ex"] == "Wide street" and at.query_params["md_text"] == WIDE
    assert not notice(at)


@pytest.mark.parametrize("example", [None, "Wide street"])
def test_a_link_with_a_sentence_of_its_own_is_your_own(example: str | None) -> None:
    """A hand-made link: its sentence wins over the example it names (or the default one)."""
    at = open_page({"md_text": "Dogs bark at night."} | ({"md_ex": example} if example else {}))
    assert (at.session_state["md_ex"], at.session_state["md_text"]) == ("Your own sentence", "Dogs bark at night.")
    assert not notice(at)


def test_a_link_in_todays_form_restores_the_view() -> None:
    """What the browser writes for a chosen view (tests/test_browser_model.py checks the writing itself)."""
    at = open_page({"md_ex": "Your own sentence", "md_text": "Dogs bark at night.", "md_layer": "2", "md_head": "7",
                    "md_tok": "2: bark", "talk": "true"})  # fmt: skip
    s = at.session_state
    assert (s["md_ex"], s["md_text"], s["md_layer"], s["md_head"], s["md_tok"]) == (
        "Your own sentence", "Dogs bark at night.", 2, 7, "2: bark"
    )  # fmt: skip
    assert s["talk"] and "Who does `bark` look at?" in text_of(at)
    assert not notice(at)


def test_bad_values_in_a_link_fall_back_to_the_defaults_with_a_notice() -> None:
    at = open_page({"md_layer": "99", "md_head": "x", "md_ex": "<script>", "md_tok": "99: zz", "md_text": TIRED})
    assert not at.exception
    text = notice(at)
    assert text and "<script>" not in text
    for key in ("md_layer", "md_head", "md_ex", "md_tok"):
        assert f"{key} =" in text
    s = at.session_state
    assert (s["md_layer"], s["md_head"], s["md_ex"], s["md_tok"]) == (3, 1, "Tired animal", "10: it")


def test_a_bookmark_from_before_bound_widgets_opens_the_same_view() -> None:
    """Old links wrote the example's code, the token's index and talk=1; they are rewritten once and open as before."""
    at = open_page({"md_ex": "wide", "md_tok": "8", "md_layer": "2", "talk": "1"})
    s = at.session_state
    assert (s["md_ex"], s["md_text"], s["md_tok"], s["md_layer"]) == ("Wide street", WIDE, "8: street", 2)
    assert s["talk"]
    assert at.query_params["md_ex"] == "Wide street" and at.query_params["md_tok"] == "8: street"
    assert not notice(at)
    at = open_page({"md_text": "Dogs bark at night.", "md_tok": "-1"})  # -1 meant "it", or the first word
    assert at.session_state["md_tok"] == "1: dogs" and not notice(at)


def test_talk_mode_folds_the_controls_and_keeps_the_figures() -> None:
    at = open_page({"talk": "true"})
    assert not at.title  # the title goes in talk mode, as on the other pages
    assert len(charts(at)) == 5
    ((_, query),) = page_links(at)
    assert "talk" not in query  # the frame's talk toggle goes along to every page by itself


def test_the_walkthrough_opens_the_linked_head_with_its_real_weights(bert) -> None:
    model = open_page()
    ((_, query),) = page_links(model)  # the model page's link to L3·H1, as the walkthrough reads it
    at = open_app_page("walkthrough", {k: v[0] for k, v in query.items()} | {"view": "One query"})
    assert not at.exception, [e.value for e in at.exception]
    assert (at.session_state["preset"], at.session_state["text"]) == ("model", TIRED)
    assert (at.session_state["layer"], at.session_state["head"]) == (3, 1)
    assert not notice(at)
    _, out = encode(bert, [TIRED])
    row = out.attentions[3].weights[0, 1, 10]  # "it" is token 10
    headline = next(m.value for m in at.markdown if m.value.startswith("####"))
    assert headline.startswith(f"#### `it` takes {float(row[2]):.0%} of its value from `animal`")
    assert at.session_state["q"] == 10
    at.selectbox(key="mask").set_value("cross").run()  # an encoder has no cross-attention: a message
    assert not at.exception and "no cross-attention" in at.error[0].value


def test_the_reading_names_a_second_key_only_when_its_share_shows(bert) -> None:
    """“[CLS]” puts almost all of its weight on itself in layer 3, head 1: no “and 0% from …”."""
    at = open_app_page("walkthrough", {"preset": "Trained model", "text": TIRED, "layer": "3", "head": "1",
                                       "view": "One query"})  # fmt: skip
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
