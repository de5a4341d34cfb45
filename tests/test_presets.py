"""The walkthrough's input presets: shapes, projections, seeds, labels and bad sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attention_core.presets import (
    PRESETS,
    WalkthroughInputs,
    random_example,
    sentence_example,
    tiny_example,
)
from attention_core.walkthrough import run_walkthrough

SENTENCE = ["The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired"]


def all_presets(device: torch.device | str = "cpu") -> list[WalkthroughInputs]:
    out = []
    for cross in (False, True):
        for positions in (False, True):
            out.append(tiny_example(positions=positions, cross=cross, device=device))
            out.append(sentence_example(seed=3, positions=positions, cross=cross, device=device))
            out.append(
                random_example(n=7, d_model=6, d_k=3, d_v=5, seed=3, positions=positions, cross=cross, device=device)
            )
    return out


def matmul_by_hand(a: torch.Tensor, b: torch.Tensor) -> list[list[float]]:
    rows, inner, cols = a.shape[0], a.shape[1], b.shape[1]
    a_, b_ = a.cpu().double().tolist(), b.cpu().double().tolist()
    return [[math.fsum(a_[i][t] * b_[t][j] for t in range(inner)) for j in range(cols)] for i in range(rows)]


def test_shapes_and_projections(device: torch.device) -> None:
    for inp in all_presets(device):
        L, S = inp.n_q, inp.n_k
        assert inp.x_q.shape == (L, inp.d_model) and inp.x_kv.shape == (S, inp.d_model)
        assert inp.w_q.shape == inp.w_k.shape == (inp.d_model, inp.d_k)
        assert inp.w_v.shape == (inp.d_model, inp.d_v)
        assert inp.q.shape == (L, inp.d_k) and inp.k.shape == (S, inp.d_k) and inp.v.shape == (S, inp.d_v)
        for t in (inp.x_q, inp.x_kv, inp.w_q, inp.w_k, inp.w_v, inp.q, inp.k, inp.v):
            assert t.device.type == device.type
        # Q = X_q W_q, K = X_kv W_k, V = X_kv W_v, checked with a matmul written out here
        for got, x, w in ((inp.q, inp.x_q, inp.w_q), (inp.k, inp.x_kv, inp.w_k), (inp.v, inp.x_kv, inp.w_v)):
            np.testing.assert_allclose(got.cpu().double().numpy(), matmul_by_hand(x, w), rtol=1e-5, atol=1e-5)


def test_sizes_follow_the_arguments() -> None:
    s = sentence_example(d_model=12, d_k=5, d_v=7)
    assert (s.n_q, s.n_k, s.d_model, s.d_k, s.d_v) == (11, 11, 12, 5, 7)
    r = random_example(n=9, d_model=10, d_k=2, d_v=3)
    assert (r.n_q, r.n_k, r.d_model, r.d_k, r.d_v) == (9, 9, 10, 2, 3)
    t = tiny_example()
    assert (t.n_q, t.n_k, t.d_model, t.d_k, t.d_v) == (3, 3, 4, 2, 2)


def test_cross_variants_have_n_q_not_n_k() -> None:
    for inp in (tiny_example(cross=True), sentence_example(cross=True), random_example(cross=True)):
        assert inp.n_q != inp.n_k
    for n in (1, 2, 3, 16):
        r = random_example(n=n, cross=True)
        assert r.n_k == n and r.n_q != n


def test_tiny_example_is_small_integers() -> None:
    inp = tiny_example(positions=False)
    for x, w, got in ((inp.x_q, inp.w_q, inp.q), (inp.x_kv, inp.w_k, inp.k), (inp.x_kv, inp.w_v, inp.v)):
        by_hand = matmul_by_hand(x, w)
        assert all(float(c).is_integer() for row in by_hand for c in row)
        assert all(abs(c) <= 9 for row in by_hand for c in row)  # readable by hand
        assert got.cpu().tolist() == by_hand


def test_positions_add_the_sinusoid() -> None:
    for make in (tiny_example, sentence_example, random_example):
        plain, placed = make(positions=False), make(positions=True)
        n, d = placed.x_kv.shape
        angle = [[p / 10000 ** ((f - f % 2) / d) for f in range(d)] for p in range(n)]
        expected = [[math.sin(a) if f % 2 == 0 else math.cos(a) for f, a in enumerate(row)] for row in angle]
        np.testing.assert_allclose((placed.x_kv - plain.x_kv).double().numpy(), expected, atol=1e-6)
        assert placed.positions and not plain.positions


@pytest.mark.parametrize("make", [sentence_example, random_example], ids=["sentence", "random"])
def test_determinism_per_seed(make) -> None:
    a, b, c = make(seed=5), make(seed=5), make(seed=6)
    for name in ("x_q", "x_kv", "w_q", "w_k", "w_v", "q", "k", "v"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert not torch.equal(a.w_q, c.w_q)
    assert not torch.equal(a.q, c.q)


def test_token_labels_are_unique() -> None:
    for inp in all_presets():
        assert len(inp.query_tokens) == inp.n_q and len(inp.key_tokens) == inp.n_k
        assert len(set(inp.query_tokens)) == len(inp.query_tokens), inp.query_tokens
        assert len(set(inp.key_tokens)) == len(inp.key_tokens), inp.key_tokens


def test_repeated_words_get_position_suffixes() -> None:
    # no current preset repeats a word exactly ("The" ≠ "the"), so check the labelling rule directly
    from attention_core.presets import _unique

    assert _unique(["the", "cat", "the", "mat"]) == ["the·0", "cat", "the·2", "mat"]


def test_sentence_reads_the_sentence() -> None:
    inp = sentence_example()
    assert [t.split("·")[0] for t in inp.key_tokens] == SENTENCE
    assert inp.query_tokens == inp.key_tokens


def test_the_walkthrough_builds_each_preset() -> None:
    def inputs(preset: str, **kw) -> WalkthroughInputs:
        return run_walkthrough(preset, **kw).inputs

    assert PRESETS == ("tiny", "sentence", "random", "model", "decoder")
    assert torch.equal(inputs("tiny", positions=False).q, tiny_example().q)
    assert torch.equal(inputs("sentence", d_k=3, seed=2).k, sentence_example(d_model=8, d_k=3, d_v=4, seed=2).k)
    r = inputs("random", n=5, d_model=6, d_k=3, d_v=2, seed=9, positions=False, mask="cross")
    assert torch.equal(r.v, random_example(n=5, d_model=6, d_k=3, d_v=2, seed=9, cross=True).v)
    assert inputs("sentence", d_model=2).d_model == 4  # the sentence needs 4 features for its groups
    with pytest.raises(ValueError, match="preset must be one of"):
        run_walkthrough("bogus")


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: random_example(n=0), "n must be ≥ 1"),
        (lambda: random_example(n=17), "n must be ≤ 16"),
        (lambda: random_example(n=4.5), "n must be an integer"),
        (lambda: random_example(d_model=0), "d_model must be ≥ 1"),
        (lambda: random_example(d_k=65), "d_k must be ≤ 64"),
        (lambda: random_example(d_v=-1), "d_v must be ≥ 1"),
        (lambda: random_example(seed=-1), "seed must be ≥ 0"),
        (lambda: sentence_example(d_model=3), "d_model must be ≥ 4"),
        (lambda: sentence_example(d_k=0), "d_k must be ≥ 1"),
        (lambda: sentence_example(seed=2**31), "seed must be ≤"),
        (lambda: tiny_example(device="gpu"), "device must be"),
    ],
)
def test_preset_errors(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_walkthrough_row_sum_error_skips_fully_masked_rows() -> None:
    r = run_walkthrough("tiny", mask="padding", pad=3)  # every key padded: no row may attend
    assert r.row_sum_error is None
    r = run_walkthrough("sentence", mask="causal")
    expected = float((r.trace.weights.sum(-1) - 1).abs().max())
    assert r.row_sum_error == expected and r.row_sum_error < 1e-5


@pytest.fixture(scope="module")
def bert():
    from attention_core.bert import load_bert

    return load_bert(device="cpu")


def test_the_model_preset_is_one_real_head(bert) -> None:
    """X·W (with the 1s column and the bias row) reproduces the model's own Q, K, V of that head."""
    from attention_core.bert import encode
    from attention_core.presets import MODEL_TEXT, model_example

    inp = model_example(text=MODEL_TEXT, layer=3, head=1, model=bert)
    assert torch.equal(run_walkthrough("model", text=MODEL_TEXT, layer=3, head=1, model=bert).inputs.q, inp.q)
    _, out = encode(bert, [MODEL_TEXT])
    a = out.attentions[3]
    assert inp.d_model == 385 and inp.d_k == inp.d_v == 32 and inp.n_q == inp.n_k == 16
    assert torch.allclose(inp.x_q[:, -1], torch.ones(16))
    for name in ("q", "k", "v"):
        assert torch.allclose(getattr(inp, name), getattr(a, name)[0, 1], atol=1e-5), name
    assert inp.key_tokens[10] == "it" and inp.key_tokens[1] == "the·1"  # repeated words get their position
    with pytest.raises(ValueError, match="no cross-attention"):
        model_example(cross=True, model=bert)
    with pytest.raises(ValueError, match="layer must be ≤ 5"):
        model_example(layer=6, model=bert)
    with pytest.raises(ValueError, match="empty"):
        model_example(text=" ", model=bert)
