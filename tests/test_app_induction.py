"""AppTest of the "Watch it learn" page: every tab and model from its link, Train and Stop, the queue, the ablation
and the viewer's own sequence at their edges, bad links and talk mode.

Training runs 20 steps (the step choices are shortened for the test), so a Train takes about a second.
"""

from __future__ import annotations

from functools import partial

import pytest

import attention_core.induction.training as training
import ui.induction.train as train_tab
from attention_core.induction.shipped import load_run
from tests.support.shown import charts, metrics, notice, opened, text
from ui.runlock import RunLock

TABS = ("Train", "Ablate a head", "Your sequence")
open_page = partial(opened, "induction")


@pytest.fixture(autouse=True)
def _short_runs(monkeypatch):
    monkeypatch.setattr(train_tab, "STEP_CHOICES", (20, 40, *train_tab.STEP_CHOICES))


@pytest.mark.parametrize("tab", TABS)
def test_every_tab_opens_from_its_link_and_draws(tab: str) -> None:
    at = open_page({"in_tab": tab})
    assert at.session_state["in_tab"] == tab
    assert not at.error, [e.value for e in at.error]
    assert len(charts(at)) == {"Train": 3, "Ablate a head": 2, "Your sequence": 1}[tab]
    assert not notice(at)


def test_the_page_opens_on_the_shipped_run_with_its_recorded_scores() -> None:
    at = open_page()
    scores = load_run("induction").scores
    m = metrics(at)
    assert m["Repeated half"] == f"{scores['loss_repeat']:.2f} nats"
    best = max(scores["prefix_matching"][1])
    assert m["Induction head"].endswith(f"{best:.2f}") and m["Induction head"].startswith("L1 H")
    assert m["Phase change"].startswith("step ")
    assert "Showing the shipped run" in text(at)
    assert at.button(key="in_reset").disabled


@pytest.mark.parametrize("model", ["One layer", "No causal mask"])
def test_each_experiment_opens_on_its_shipped_run(model: str) -> None:
    at = open_page({"in_model": model})
    scores = load_run({"One layer": "one_layer", "No causal mask": "no_mask"}[model]).scores
    m = metrics(at)
    assert m["Repeated half"] == f"{scores['loss_repeat']:.2f} nats"
    if model == "One layer":
        assert m["Previous-token head"] == "none" and m["Phase change"] == "not yet"
        assert "nothing has written" in text(at)
    else:
        assert "reads the answer" in text(at)


def test_train_trains_live_and_keeps_the_run_and_the_shipped_one_comes_back() -> None:
    at = open_page({"in_steps": "20", "in_seed": "3"})
    at.button(key="in_train").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Showing your run: seed 3, 20 steps" in text(at)
    assert not at.button(key="in_reset").disabled
    assert metrics(at)["Phase change"] == "not yet"  # 20 steps: the plateau
    at.button(key="in_reset").click().run()
    assert "Showing the shipped run" in text(at)


def test_a_run_is_deterministic_under_its_seed(monkeypatch) -> None:
    monkeypatch.setattr(training, "busy_cpu", lambda: True)  # the same thread count for both runs
    def trained(seed: str) -> dict[str, str]:
        at = open_page({"in_steps": "20", "in_seed": seed})
        at.button(key="in_train").click().run()
        return metrics(at)

    assert trained("5") == trained("5")


def test_stop_is_harmless_when_nothing_trains() -> None:
    at = open_page()
    at.button(key="in_stop").click().run()
    assert not at.exception and not at.error


def test_a_busy_server_queues_the_training_and_gives_up_without_an_exception(monkeypatch) -> None:
    monkeypatch.setattr(RunLock, "try_acquire", lambda self, timeout=0.0, what="": False)
    monkeypatch.setattr(RunLock, "wait_s", 0.2)
    at = open_page({"in_steps": "20"})
    at.button(key="in_train").click().run()
    assert not at.exception
    assert any("Still busy" in s.label for s in at.status)
    assert "Showing the shipped run" in text(at)


def test_zeroing_the_previous_token_heads_breaks_the_induction_head_and_another_head_does_not() -> None:
    at = open_page({"in_tab": "Ablate a head"})
    chosen = at.multiselect(key="in_ablate").value
    prev = load_run("induction").scores["previous_token"][0]
    assert chosen == [f"L0 H{h}" for h in range(4) if prev[h] > 0.2]  # it opens on the previous-token heads
    broken = metrics(at)
    assert float(broken["Repeated half"].split()[0]) > 3.0
    assert float(next(v for k, v in broken.items() if "prefix matching" in k)) < 0.3
    at.multiselect(key="in_ablate").set_value([]).run()
    intact = metrics(at)
    assert float(intact["Repeated half"].split()[0]) < 0.5
    assert float(next(v for k, v in intact.items() if "prefix matching" in k)) > 0.7
    other = min(range(4), key=lambda h: prev[h])  # the layer-0 head least like a previous-token head
    at.multiselect(key="in_ablate").set_value([f"L0 H{other}"]).run()
    assert float(metrics(at)["Repeated half"].split()[0]) < 1.0


@pytest.mark.parametrize("heads", [[], ["L0 H0"], ["L1 H3"], [f"L{i} H{h}" for i in range(2) for h in range(4)]])
def test_every_ablation_edge_draws(heads: list[str]) -> None:
    at = open_page({"in_tab": "Ablate a head"})
    at.multiselect(key="in_ablate").set_value(heads).run()
    assert not at.error and not at.exception and len(charts(at)) == 2


def test_your_words_are_read_and_the_copyable_ones_predicted() -> None:
    at = open_page({"in_tab": "Your sequence"})
    m = metrics(at)
    assert m["Copyable predictions"] == "6 of 6 right"  # quick→brown … lazy→dog, after "then the"
    at.text_input(key="in_text").input("a b c d a b c d").run()
    assert metrics(at)["Copyable predictions"].endswith("of 3 right")


@pytest.mark.parametrize(
    ("words", "message"),
    [("", "at least one word"), ("alone", "at least two words"), ("w " * 60, "positions hold 48"),
     (" ".join(f"w{i}" for i in range(49)), "positions hold 48")],
)  # fmt: skip
def test_text_the_model_cannot_read_is_a_message(words: str, message: str) -> None:
    at = open_page({"in_tab": "Your sequence"})
    at.text_input(key="in_text").input(words).run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.parametrize(("length", "repeats"), [(2, 1), (2, 5), (24, 1), (24, 5), (13, 3)])
def test_random_sequences_at_their_edges(length: int, repeats: int) -> None:
    at = open_page({"in_tab": "Your sequence", "in_source": "Random tokens", "in_len": str(length),
                    "in_reps": str(repeats), "in_sseed": "9999"})  # fmt: skip
    assert not at.error and len(charts(at)) == 1
    _, total = metrics(at)["Copyable predictions"].split(" right")[0].split(" of ")
    shown = min(repeats, 48 // length - 1)  # as many repeats as the 48 positions hold
    assert int(total) == length * shown - 1  # every prediction after the first block, but its first


@pytest.mark.parametrize(
    ("query", "key"),
    [({"in_seed": "1000"}, "in_seed"), ({"in_steps": "7"}, "in_steps"), ({"in_model": "Three layers"}, "in_model"),
     ({"in_tab": "Ablate a head", "in_ablate": "L7 H9"}, "in_ablate"),
     ({"in_tab": "Your sequence", "in_len": "99", "in_source": "Random tokens"}, "in_len")],
)  # fmt: skip
def test_a_bad_value_in_a_link_falls_back_to_the_default_with_a_notice(query: dict[str, str], key: str) -> None:
    at = open_page(query)
    assert f"{key} =" in notice(at)
    assert not at.error


@pytest.mark.parametrize("tab", TABS)
def test_talk_mode_drops_the_prose_and_keeps_the_figures(tab: str) -> None:
    at = open_page({"in_tab": tab, "talk": "true"})
    assert not at.title and not at.error
    assert "A decoder that is nothing but attention" not in text(at)
    assert len(charts(at)) == {"Train": 2, "Ablate a head": 2, "Your sequence": 1}[tab]
