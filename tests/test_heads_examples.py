"""What the heads page computes (ui.heads.examples), the code it shows (ui.snippets) and its figures (figures.heads)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from attention_core.heads import mean_pool_kv, multi_head_attention
from attention_core.kv_cache import DecodeTiming
from attention_core.presets import sentence_example
from figures.heads import (
    decode_steps_figure,
    decode_timing_figure,
    head_heatmap,
    kv_cache_figure,
    sharing_figure,
    split_figure,
)
from ui.heads.examples import example_weights, heads_example
from ui.snippets import split_snippet


def sentence(d_model: int, seed: int) -> torch.Tensor:
    """The walkthrough sentence's token vectors with positions, ``(L, d_model)``: what the heads example reads."""
    return sentence_example(d_model=d_model, d_k=4, d_v=4, seed=seed, positions=True).x_q


def test_mha_example_agrees_with_torch_multihead_attention() -> None:
    e = heads_example(d_model=32, n_heads=4, n_kv_heads=4, seed=2)
    w_q, w_k, w_v, w_o = example_weights(32, 4, 2)
    ref = nn.MultiheadAttention(32, 4, bias=False, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([w_q.T, w_k.T, w_v.T]))
        ref.out_proj.weight.copy_(w_o.T)
        x = sentence(32, 2).unsqueeze(0)
        _, weights = ref(x, x, x, average_attn_weights=False)
    torch.testing.assert_close(e.weights_mha, weights[0], atol=1e-5, rtol=1e-4)
    assert e.max_abs_diff == 0.0 and e.rel_diff == 0.0  # g = h: the conversion changes nothing


@pytest.mark.parametrize("g", [1, 2])
def test_gqa_example_is_mha_with_mean_pooled_kv(g: int) -> None:
    e = heads_example(d_model=16, n_heads=4, n_kv_heads=g, seed=1, causal=True)
    w_q, w_k, w_v, w_o = example_weights(16, 4, 1)
    x = sentence(16, 1)
    expected = multi_head_attention(x, w_q, mean_pool_kv(w_k, 4, g), mean_pool_kv(w_v, 4, g), w_o, 4, g,
                                    is_causal=True)  # fmt: skip
    mha = multi_head_attention(x, w_q, w_k, w_v, w_o, 4, is_causal=True)
    assert e.max_abs_diff == pytest.approx(float((expected - mha).abs().max()))
    assert e.rel_diff == pytest.approx(float((expected - mha).norm() / mha.norm()))
    assert e.max_abs_diff > 0 and e.delta_torch < 1e-5
    assert bool(torch.all(torch.triu(e.weights_gqa, diagonal=1) == 0))  # causal: nothing above the diagonal


def test_example_uses_the_walkthrough_sentence() -> None:
    e = heads_example()
    s = sentence_example(d_model=32, d_k=4, d_v=4, seed=0, positions=True)
    assert e.tokens == s.query_tokens and len(e.tokens) == 11
    torch.testing.assert_close(e.q, s.x_q @ example_weights(32, 4, 0)[0])  # the split tab's Q, before the split


def test_decode_example_matches_causal_attention_and_grows_a_row_per_step() -> None:
    d = heads_example(d_model=32, n_heads=8, n_kv_heads=2, seed=4)
    assert d.decode_diff < 1e-5
    assert [tuple(w.shape) for w in d.decoded] == [(8, t + 1) for t in range(11)]


def test_split_snippet_runs_and_its_comments_are_the_shapes_it_makes() -> None:
    """Execute the snippet line by line and compare each tensor's shape with the comment next to it."""
    T, C, h, g = 11, 32, 4, 2
    code = split_snippet(T, C, h, g)
    gen = torch.Generator().manual_seed(0)
    env = {"x": torch.randn(1, T, C, generator=gen), "math": __import__("math")}
    env.update({f"W_{n}": torch.randn(C, C if n in "qo" else C // h * g, generator=gen) for n in "qkvo"})
    for line in code.splitlines():
        stmt, _, comment = line.partition("#")
        exec(stmt, env)  # the snippet is this library's own output
        target = stmt.split("=")[0].strip()
        shape = comment.strip().split(")")[0] + ")"
        if target in env and isinstance(env[target], torch.Tensor):
            assert str(tuple(env[target].shape)) == shape, line
    expected = multi_head_attention(env["x"][0], env["W_q"], env["W_k"], env["W_v"], env["W_o"], h, g)
    torch.testing.assert_close(env["y"][0], expected, atol=1e-4, rtol=1e-4)


def test_split_snippet_rejects_what_cannot_be_split() -> None:
    with pytest.raises(ValueError, match="divisible"):
        split_snippet(11, 30, 4)
    with pytest.raises(ValueError, match="must divide"):
        split_snippet(11, 32, 4, 3)


# ---- figures -------------------------------------------------------------------------------


def test_head_heatmap_draws_one_head_on_the_shared_0_1_scale() -> None:
    w = np.random.default_rng(0).dirichlet(np.ones(5), size=5)  # (L, S), rows sum to 1
    fig = head_heatmap(w, list("abcde"), 3, 1, grouped=True)
    (heat,) = fig.data
    assert heat.zmin == 0 and heat.zmax == 1 and not heat.showscale
    assert "head 3" in fig.layout.title.text and "K/V 1" in fig.layout.title.text
    assert "K/V" not in head_heatmap(w, list("abcde"), 3, 3).layout.title.text  # no sharing, no group named
    assert head_heatmap(w, list("abcde"), 3, 1, colorbar=True).data[0].showscale
    with pytest.raises(ValueError):
        head_heatmap(w, list("abcd"), 0, 0)


def test_sharing_figure_draws_one_line_per_query_head() -> None:
    fig = sharing_figure(8, 2)
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 8
    assert [t.x[1] for t in lines[:4]] == [lines[0].x[1]] * 4  # the first group meets at one K/V head
    with pytest.raises(ValueError, match="must divide"):
        sharing_figure(8, 3)


def test_split_figure_marks_each_heads_columns() -> None:
    fig = split_figure(np.zeros((3, 8)), ["a", "b", "c"], 4)
    assert len(fig.layout.shapes) == 4
    assert [a.text for a in fig.layout.annotations] == [f"<b>h{i}</b>" for i in range(4)]
    assert [a.hovertext for a in fig.layout.annotations][1] == "head 1: features 2–3 of Q"


def test_kv_cache_figure_plots_both_caches_and_the_budget() -> None:
    fig = kv_cache_figure([1024, 2048], [2**30, 2**31], [2**28, 2**29], chosen=2048, budget_bytes=2**32,
                          model="M", n_heads=32, n_kv_heads=8)  # fmt: skip
    names = [t.name for t in fig.data]
    assert names[:3] == ["MHA: 32 K/V heads", "M: 8 K/V heads", "memory left for the cache"]
    assert list(fig.data[2].y) == [4.0, 4.0]
    assert not fig.layout.shapes  # no shapes: on log axes they would be placed in log10 units


def test_decode_figures() -> None:
    timing = DecodeTiming((256, 512, 1024), (1e-4, 2e-4, 4e-4), (1e-2, None, None), threads=1, wall_s=1.0,
                          max_abs_diff=0.0)  # fmt: skip
    fig = decode_timing_figure(timing)
    assert "slope 1.00" in fig.data[0].name and fig.data[0].y[0] == pytest.approx(0.1)
    assert [t.name for t in fig.data if t.showlegend is not False] == ["with a KV cache (slope 1.00)",
                                                                       "recomputing everything"]  # one point: no fit
    weights = [np.ones((2, t + 1)) / (t + 1) for t in range(4)]
    fig = decode_steps_figure(weights, ["a", "b", "c", "d"], 2, 1)
    assert fig.data[0].z.shape == (3, 4)
    with pytest.raises(ValueError):
        decode_steps_figure(weights, ["a", "b", "c", "d"], 4, 0)
