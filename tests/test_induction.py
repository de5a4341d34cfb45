"""attention_core.induction: the scores on hand-made patterns, the task, the model against torch's SDPA, the
training loop's determinism, the shipped weights against the scores they were saved with, and bad input."""

from __future__ import annotations

import math

import pytest
import torch

from attention_core.induction import (
    InductionConfig,
    InductionWeights,
    LayerWeights,
    copying_score,
    copying_scores,
    eval_tokens,
    forward,
    half_losses,
    head_scores,
    init_weights,
    phase_change_step,
    prefix_matching_score,
    previous_token_score,
    repeated_tokens,
    seeded_generator,
    tokens_from_words,
    train,
)
from attention_core.induction.model import check_tokens
from attention_core.induction.shipped import RUNS, SHIPPED, load_run, scores_of

SMALL = InductionConfig(vocab=12, half=5, d_model=16, n_heads=2, layers=2)


# --------------------------------------------------------------------------------------------
# Scores on hand-made patterns


def previous_token_pattern(n: int) -> torch.Tensor:
    """Every query on the token before it (the first, which has none, on itself)."""
    w = torch.zeros(n, n, dtype=torch.float64)
    w[0, 0] = 1.0
    w[torch.arange(1, n), torch.arange(n - 1)] = 1.0
    return w


def induction_pattern(half: int) -> torch.Tensor:
    """Queries of the repeat on the token after their earlier copy; the first half on itself."""
    n = 2 * half
    w = torch.eye(n, dtype=torch.float64)
    for i in range(half, n):
        w[i] = 0.0
        w[i, i - half + 1] = 1.0
    return w


def uniform_causal(n: int) -> torch.Tensor:
    return torch.tril(torch.ones(n, n, dtype=torch.float64)) / torch.arange(1, n + 1, dtype=torch.float64)[:, None]


def test_a_perfect_previous_token_head_scores_1_and_one_that_looks_at_itself_0() -> None:
    assert previous_token_score(previous_token_pattern(8)[None]).item() == 1.0
    assert previous_token_score(torch.eye(8, dtype=torch.float64)[None]).item() == 0.0


def test_the_previous_token_score_of_uniform_causal_attention_is_the_mean_of_1_over_i_plus_1() -> None:
    n = 10
    by_hand = sum(1 / (i + 1) for i in range(1, n)) / (n - 1)  # query i spreads 1 over i + 1 keys
    assert previous_token_score(uniform_causal(n)[None]).item() == pytest.approx(by_hand, rel=1e-12)


def test_a_perfect_induction_head_scores_1_on_prefix_matching_and_a_previous_token_head_0() -> None:
    assert prefix_matching_score(induction_pattern(6)[None], 6).item() == 1.0
    assert prefix_matching_score(previous_token_pattern(12)[None], 6).item() == 0.0


def test_scores_are_per_head_averaged_over_the_batch() -> None:
    """(N=2, H=2, L, L): head 0 perfect in one sequence and self-attending in the other: 0.5; head 1 always 1."""
    n = 6
    heads = torch.stack([torch.stack([previous_token_pattern(n), torch.eye(n, dtype=torch.float64)]),
                         torch.stack([previous_token_pattern(n)] * 2)], dim=1)  # fmt: skip
    assert heads.shape == (2, 2, n, n)
    assert previous_token_score(heads).tolist() == [0.5, 1.0]


def test_copying_score_counts_the_rows_whose_own_logit_is_on_top() -> None:
    assert copying_score(torch.eye(5)) == 1.0
    assert copying_score(torch.ones(5, 5)) == 0.0  # ties count against
    shifted = torch.roll(torch.eye(4), 1, dims=1)  # every token raises the next one's logit
    assert copying_score(shifted) == 0.0
    half = torch.eye(4)
    half[2:] = shifted[2:]
    assert copying_score(half) == 0.5


def test_copying_scores_read_a_heads_ov_circuit_through_the_unembedding() -> None:
    """Orthonormal embeddings E and W_U = Eᵀ: with W_V·W_O = I the head copies every token (score 1); with
    W_V·W_O = Eᵀ S E, S a cyclic shift, it writes each token's successor instead (score 0)."""
    cfg = InductionConfig(vocab=8, half=4, d_model=8, n_heads=1, layers=1)
    embed = torch.linalg.qr(torch.randn(8, 8, generator=torch.Generator().manual_seed(1)))[0]  # rows orthonormal
    shift = torch.roll(torch.eye(8), 1, dims=1)

    def model(w_v: torch.Tensor) -> InductionWeights:
        layer = LayerWeights(torch.zeros(8, 8), torch.zeros(8, 8), w_v, torch.eye(8))
        return InductionWeights(cfg, embed, torch.zeros(8, 8), (layer,), embed.T.contiguous())

    assert copying_scores(model(torch.eye(8))).tolist() == [[1.0]]
    assert copying_scores(model(embed.T @ shift @ embed)).tolist() == [[0.0]]


# --------------------------------------------------------------------------------------------
# The task


def test_repeated_tokens_repeat_their_first_half_of_distinct_tokens() -> None:
    t = repeated_tokens(16, 7, 20, generator=seeded_generator(3, torch.device("cpu")))
    assert t.shape == (16, 14) and t.dtype == torch.int64
    assert torch.equal(t[:, :7], t[:, 7:])
    assert all(len(set(row[:7].tolist())) == 7 for row in t)
    assert int(t.min()) >= 0 and int(t.max()) < 20


def test_the_task_generator_is_deterministic_under_a_seed(device: torch.device) -> None:
    def draw(seed: int) -> torch.Tensor:
        return repeated_tokens(8, 6, 30, generator=seeded_generator(seed, device))

    assert draw(5).device.type == device.type
    assert torch.equal(draw(5), draw(5))
    assert not torch.equal(draw(5), draw(6))


def test_a_viewers_words_become_tokens_the_same_word_the_same_token() -> None:
    ids, words = tokens_from_words("a rose is a rose", 48)
    assert words == ["a", "rose", "is", "a", "rose"]
    assert ids[0] == ids[3] and ids[1] == ids[4] and len({ids[0], ids[1], ids[2]}) == 3
    assert all(0 <= i < 48 for i in ids)


# --------------------------------------------------------------------------------------------
# The model


def sdpa_reference(w: InductionWeights, tokens: torch.Tensor, causal: bool) -> torch.Tensor:
    """The decoder written again with torch's own SDPA and plain reshapes, in float64."""
    cfg = w.config
    d = {k: v.detach().double() for k, v in w.named().items()}
    x = d["embed"][tokens]
    pos = d["pos"][: tokens.shape[1]]
    n, length = tokens.shape
    for i in range(cfg.layers):

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(n, length, cfg.n_heads, cfg.d_head).transpose(1, 2)

        q, k, v = heads((x + pos) @ d[f"blocks.{i}.w_q"]), heads((x + pos) @ d[f"blocks.{i}.w_k"]), heads(
            x @ d[f"blocks.{i}.w_v"])  # fmt: skip
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        x = x + out.transpose(1, 2).reshape(n, length, cfg.d_model) @ d[f"blocks.{i}.w_o"]
    return x @ d["unembed"]


@pytest.mark.parametrize("causal", [True, False])
def test_the_forward_matches_torch_sdpa_in_float64(device: torch.device, causal: bool) -> None:
    w = init_weights(SMALL, seed=2, device=device)
    tokens = repeated_tokens(4, SMALL.half, SMALL.vocab, generator=seeded_generator(1, device))
    ref = sdpa_reference(w, tokens, causal)
    for keep in (False, True):
        got = forward(w, tokens, causal=causal, keep=keep).logits.double()
        # float32 against float64: the error of float32's own SDPA path is the yardstick
        f32 = sdpa_reference(InductionWeights(SMALL, *(t.detach().float() for t in (w.embed, w.pos)), w.layers,
                                              w.unembed), tokens, causal)  # fmt: skip
        assert (got - ref).abs().max() <= max(2 * (f32 - ref).abs().max(), 1e-5)


def test_under_the_causal_mask_a_future_token_never_changes_a_past_logit() -> None:
    w = init_weights(SMALL, seed=0)
    a = torch.tensor([[1, 2, 3, 4, 5, 6]])
    b = a.clone()
    b[0, 4] = 9
    with torch.no_grad():
        assert torch.equal(forward(w, a).logits[:, :4], forward(w, b).logits[:, :4])
        assert not torch.equal(forward(w, a, causal=False).logits[:, :4], forward(w, b, causal=False).logits[:, :4])


def test_ablating_every_head_leaves_only_the_direct_path() -> None:
    w = init_weights(SMALL, seed=0)
    tokens = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    every = [(layer, h) for layer in range(SMALL.layers) for h in range(SMALL.n_heads)]
    with torch.no_grad():
        got = forward(w, tokens, ablate=every).logits
        fw = forward(w, tokens, ablate=[(1, 0)], keep=True)
    torch.testing.assert_close(got, w.embed[tokens] @ w.unembed)
    assert fw.head_outputs is not None and float(fw.head_outputs[1][:, 0].abs().max()) == 0.0
    assert float(fw.head_outputs[1][:, 1].abs().max()) > 0.0


def test_half_losses_split_the_predictions_at_the_repeat() -> None:
    """Logits that put all weight on the right token in the repeat and none in the first half."""
    half, vocab = 4, 10
    tokens = torch.tensor([[0, 1, 2, 3, 0, 1, 2, 3]])
    logits = torch.zeros(1, 8, vocab)
    logits[0, half:-1] = torch.nn.functional.one_hot(tokens[0, half + 1 :], vocab) * 100.0
    first, repeat = half_losses(logits, tokens, half)
    assert first.item() == pytest.approx(math.log(vocab))
    assert repeat.item() == pytest.approx(0.0, abs=1e-6)


# --------------------------------------------------------------------------------------------
# Training


def records(seed: int, device: torch.device | str = "cpu", **kw) -> list:
    return [(p.step, p.loss_first, p.loss_repeat, p.induction_score, p.previous_token, p.prefix_matching, p.copying)
            for p in train(seed=seed, steps=4, every=2, batch=8, config=SMALL, device=device, single_thread=True,
                           **kw)]  # fmt: skip


def test_the_training_loop_is_deterministic_under_a_seed(device: torch.device) -> None:
    a, b, c = records(0, device), records(0, device), records(1, device)
    assert [r[0] for r in a] == [0, 2, 4]
    assert a == b
    assert a != c
    assert a[-1][2] != a[0][2]  # it trained


def test_training_yields_live_weights_and_the_record_fields() -> None:
    gen = train(seed=0, steps=3, every=1, batch=4, config=SMALL, causal=False)
    ps = list(gen)
    assert [p.step for p in ps] == [0, 1, 2, 3]
    assert all(p.seconds >= 0 for p in ps) and ps[-1].seconds >= ps[0].seconds
    assert len(ps[-1].previous_token) == SMALL.layers and len(ps[-1].previous_token[0]) == SMALL.n_heads
    assert ps[0].weights is ps[-1].weights  # trained in place: a snapshot is the caller's copy


def test_the_phase_change_is_the_first_record_below_half_of_ln_v() -> None:
    v = 48
    assert phase_change_step([0, 10, 20, 30], [3.9, 3.8, 1.9, 0.4], v) == 20  # ½·ln 48 = 1.94
    assert phase_change_step([0, 10], [3.9, 3.0], v) is None


# --------------------------------------------------------------------------------------------
# The shipped weights


@pytest.mark.parametrize("name", list(RUNS))
def test_the_shipped_weights_reproduce_their_recorded_scores(name: str) -> None:
    run = load_run(name)
    again = scores_of(run.weights, run.settings["causal"], run.settings["seed"])
    for key, recorded in run.scores.items():
        torch.testing.assert_close(torch.tensor(again[key]), torch.tensor(recorded), atol=1e-5, rtol=1e-5)
    last = run.history[-1]
    assert last["step"] == RUNS[name]["steps"] == run.settings["steps"]
    assert last["loss_repeat"] == pytest.approx(run.scores["loss_repeat"], abs=1e-5)


def test_the_shipped_runs_show_what_the_page_says_they_show() -> None:
    induction, one, no_mask = (load_run(n).scores for n in ("induction", "one_layer", "no_mask"))
    assert induction["loss_repeat"] < 0.5 < 3.0 < induction["loss_first"]
    assert max(induction["prefix_matching"][1]) > 0.7
    assert max(induction["previous_token"][0]) > 0.4
    assert one["loss_repeat"] > 2.0
    assert no_mask["loss_first"] < 1.0 and no_mask["loss_repeat"] < 1.0
    assert SHIPPED.stat().st_size < 1_000_000


def test_the_held_out_batch_is_fixed() -> None:
    assert torch.equal(eval_tokens(SMALL, 0), eval_tokens(SMALL, 0))
    s = head_scores(init_weights(SMALL), eval_tokens(SMALL, 0))
    assert s["previous_token"].shape == (SMALL.layers, SMALL.n_heads)


# --------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "call",
    [
        lambda: InductionConfig(vocab=10, half=11),
        lambda: InductionConfig(d_model=10, n_heads=4),
        lambda: InductionConfig(layers=0),
        lambda: check_tokens(torch.tensor([[0.0, 1.0]]), SMALL),
        lambda: check_tokens(torch.tensor([[0, 12]]), SMALL),
        lambda: check_tokens(torch.tensor([[-1, 2]]), SMALL),
        lambda: check_tokens(torch.zeros(1, 11, dtype=torch.long), SMALL),
        lambda: check_tokens([[1, 2]], SMALL),
        lambda: forward(init_weights(SMALL), torch.tensor([[1, 2]]), ablate=[(2, 0)]),
        lambda: forward(init_weights(SMALL), torch.tensor([[1, 2]]), ablate=[3]),
        lambda: train(steps=-1),
        lambda: train(lr=0.0),
        lambda: train(seed=-1),
        lambda: train(config="no"),
        lambda: previous_token_score(torch.ones(2, 3)),
        lambda: previous_token_score(torch.tensor([[float("nan")]])),
        lambda: prefix_matching_score(torch.ones(1, 6, 6), 4),
        lambda: copying_score(torch.ones(2, 3)),
        lambda: repeated_tokens(0, 3, 10),
        lambda: tokens_from_words("   ", 48),
        lambda: tokens_from_words("a b c d", 3),
        lambda: tokens_from_words("a " * 60, 48, max_len=48),
        lambda: load_run("two_layers"),
        lambda: phase_change_step([0, 1], [1.0], 48),
    ],
)
def test_bad_input_raises_value_error(call) -> None:
    with pytest.raises(ValueError):
        call()
