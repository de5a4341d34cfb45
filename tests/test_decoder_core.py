"""The decoder's forward on a tiny random Gemma-shaped model: no file, no reference library, a second.

What the real model's tests (tests/test_decoder.py) cannot afford to check many times: the KV cache
against recomputing, the window's mask by hand, grouped K/V heads, the five steps against torch's SDPA,
and input checks. The model is built by tests/tiny_decoder.py; tests/test_fake_cuda.py runs the same model's
entry points on a data-less device.
"""

from __future__ import annotations

import pytest
import torch
from tiny_decoder import ids_of, tiny
from torch.nn import functional as F

from attention_core.decoder import KVCache, decoder_mask, forward, generate, logits_of
from attention_core.decoder.model import apply_rope, rms_norm, rope_cos_sin
from attention_core.decoder.run import head_inputs, head_trace, probabilities, run_decoder


def test_the_mask_by_hand() -> None:
    ok = decoder_mask(6, 6, window=3, device=torch.device("cpu"))
    expected = torch.tensor([
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [0, 1, 1, 1, 0, 0],
        [0, 0, 1, 1, 1, 0],
        [0, 0, 0, 1, 1, 1],
    ], dtype=torch.bool)  # fmt: skip
    assert torch.equal(ok, expected)
    # the last 2 queries of 6 positions are its last 2 rows; one query within the window needs no mask
    assert torch.equal(decoder_mask(2, 6, window=3, device=torch.device("cpu")), expected[-2:])
    assert decoder_mask(1, 3, window=3, device=torch.device("cpu")) is None
    assert torch.equal(decoder_mask(3, 3, window=None, device=torch.device("cpu")), torch.ones(3, 3).tril().bool())


def test_rope_rotates_pairs_by_position_and_keeps_lengths() -> None:
    x = torch.randn(1, 1, 5, 8, dtype=torch.float64)
    cos, sin = rope_cos_sin(torch.arange(5), 8, 10_000.0, torch.float64)
    y = apply_rope(x, cos, sin)
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1))  # a rotation
    assert torch.equal(y[..., 0, :], x[..., 0, :])  # position 0: angle 0
    # pair (0, 4) at position 1 turns by angle 1 (frequency base^0 = 1)
    c, s = torch.cos(torch.tensor(1.0, dtype=torch.float64)), torch.sin(torch.tensor(1.0, dtype=torch.float64))
    assert torch.allclose(y[0, 0, 1, 0], x[0, 0, 1, 0] * c - x[0, 0, 1, 4] * s)
    assert torch.allclose(y[0, 0, 1, 4], x[0, 0, 1, 4] * c + x[0, 0, 1, 0] * s)


def test_rms_norm_scales_to_unit_rms_times_the_gain() -> None:
    x = torch.randn(3, 16, dtype=torch.float32) * 5
    gain = torch.full((16,), 2.0)
    y = rms_norm(x, gain, 1e-6)
    assert torch.allclose(y.pow(2).mean(-1).sqrt(), torch.full((3,), 2.0), atol=1e-5)


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_decoding_with_the_cache_equals_recomputing(n_kv_heads: int) -> None:
    model = tiny(n_kv_heads=n_kv_heads)
    ids = ids_of(11)  # longer than the window of 4, so the local layers' band moves
    with torch.inference_mode():
        full, _ = forward(model, ids)  # (1, 11, D)
        cache = KVCache.empty(model, 11)
        parts = [forward(model, ids[:, :5], cache)[0]]  # a prompt of 5, then one token at a time
        parts += [forward(model, ids[:, i : i + 1], cache)[0] for i in range(5, 11)]
    assert cache.length == 11
    assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-5)


def test_the_window_changes_local_layers_only_beyond_its_reach() -> None:
    model = tiny(window=4)
    ids = ids_of(9)
    with torch.inference_mode():
        _, windowed = forward(model, ids, trace=True)
        _, full = forward(model, ids, trace=True, window=False)
    for layer, a in enumerate(windowed):
        w = a.weights[0]  # (h, n, n)
        if model.config.is_global(layer):
            assert torch.count_nonzero(w.tril(-1)) == w.shape[0] * 9 * 8 // 2  # every earlier key has weight
        else:
            assert torch.all(w.tril(-4) == 0)  # i − j ≥ 4: outside the window
            assert torch.all(w.diagonal(-3, dim1=-2, dim2=-1) > 0)  # i − j = 3: the window's last key
    assert torch.equal(windowed[0].weights[..., :4, :], full[0].weights[..., :4, :])  # rows within reach agree


def test_each_layers_five_steps_equal_torch_sdpa() -> None:
    model = tiny(n_kv_heads=2)
    ids = ids_of(9)
    with torch.inference_mode():
        _, records = forward(model, ids, trace=True)
    for layer, r in enumerate(records):
        window = None if model.config.is_global(layer) else model.config.window
        mask = decoder_mask(9, 9, window=window, device=torch.device("cpu"))
        k, v = r.k.repeat_interleave(2, dim=1), r.v.repeat_interleave(2, dim=1)  # (1, 4, n, d)
        ref = F.scaled_dot_product_attention(r.q, k, v, attn_mask=mask, scale=model.config.scale)  # (1, 4, n, d)
        assert torch.allclose(r.weights @ v, ref, atol=1e-6)
        scores = (r.q @ k.transpose(-2, -1) * model.config.scale).masked_fill(~mask, float("-inf"))  # (1, 4, n, n)
        assert torch.allclose(r.weights, torch.softmax(scores, dim=-1), atol=1e-6)


def test_head_trace_and_inputs_are_that_heads_slice_of_the_run() -> None:
    model = tiny(n_kv_heads=2)
    text = "ab c abc a b"
    run = run_decoder(model, text)
    tr = head_trace(model, text, 3, 2)
    assert torch.allclose(tr.weights, run.attentions[3].weights[0, 2], atol=1e-6)
    h = head_inputs(model, text, 3, 2)
    assert torch.allclose(h["k"], run.attentions[3].k[0, 1], atol=1e-6)  # query head 2 reads K/V head 1 of 2
    # Q before QK-norm and RoPE is X·W_Q: normalising and rotating it gives the Q the attention used
    n = h["x"].shape[0]
    cos, sin = rope_cos_sin(torch.arange(n), 8, model.config.rope_base(3), torch.float32)
    q = apply_rope(rms_norm(h["x"] @ h["w_q"], model.weights.layers[3].q_norm, model.config.rms_eps), cos, sin)
    assert torch.allclose(q, h["q"], atol=1e-5)
    assert torch.equal(h["mask"], decoder_mask(n, n, window=4, device=torch.device("cpu")))


def test_greedy_generation_picks_the_argmax_of_a_full_recompute() -> None:
    model = tiny()
    steps = list(generate(model, "ab c", 6, stop_at_eos=False))
    ids = model.tokenizer.encode("ab c") + [s.id for s in steps]
    with torch.inference_mode():
        hidden, _ = forward(model, torch.tensor([ids]))
        logits = logits_of(model, hidden[0])  # (n, vocab)
    prompt = len(ids) - len(steps)
    assert [s.id for s in steps] == logits[prompt - 1 : -1].argmax(-1).tolist()
    assert [tuple(s.attention_row.shape) for s in steps] == [(6, 4, prompt + i) for i in range(6)]
    assert all(torch.allclose(s.attention_row.sum(-1), torch.ones(6, 4)) for s in steps)
    assert steps[-1].text_so_far == model.tokenizer.decode([s.id for s in steps])


def test_sampling_repeats_with_its_seed_and_follows_the_temperature() -> None:
    model = tiny()
    a = [s.id for s in generate(model, "abc", 8, temperature=1.5, seed=7, stop_at_eos=False)]
    b = [s.id for s in generate(model, "abc", 8, temperature=1.5, seed=7, stop_at_eos=False)]
    assert a == b
    logits = torch.tensor([1.0, 2.0, 3.0])
    assert torch.equal(probabilities(logits, 0.0), torch.tensor([0.0, 0.0, 1.0]))
    assert torch.allclose(probabilities(logits, 2.0), torch.softmax(logits / 2, dim=-1))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: run_decoder(m, ""), "empty"),
        (lambda m: run_decoder(m, "   "), "empty"),
        (lambda m: run_decoder(m, None), "string"),
        (lambda m: run_decoder(m, "a" * 60), "cap"),
        (lambda m: head_trace(m, "abc", 6, 0), "layer"),
        (lambda m: head_trace(m, "abc", 0, 4), "head"),
        (lambda m: head_trace(m, "abc", -1, 0), "layer"),
        (lambda m: generate(m, "abc", 0), "max_new_tokens"),
        (lambda m: generate(m, "abc", 47), "cap"),
        (lambda m: generate(m, "abc", 3, temperature=-0.5), "temperature"),
        (lambda m: generate(m, "abc", 3, temperature=float("nan")), "temperature"),
        (lambda m: run_decoder(m, "abc").next_token_probs(-1.0), "temperature"),
        (lambda m: forward(m, torch.tensor([2, 5])), "torch.long"),
        (lambda m: forward(m, torch.tensor([[2.0, 5.0]])), "torch.long"),
        (lambda m: forward(m, torch.zeros(1, 0, dtype=torch.long)), "at least one"),
        (lambda m: forward(m, torch.tensor([[2, 5, 6]]), KVCache.empty(m, 2)), "KV cache"),
    ],
)
def test_bad_input_raises_a_plain_value_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(tiny())


def test_an_unwritable_cache_folder_is_a_plain_value_error(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from attention_core.decoder import gguf_path

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ATTENTION_DECODER_CACHE", str(blocker / "cache"))
    with pytest.raises(ValueError, match="ATTENTION_DECODER_CACHE"):
        gguf_path()


def test_the_bfloat16_copy_is_read_back_only_for_its_own_file(tmp_path) -> None:
    from attention_core.decoder.weights import _read_cache, _write_cache

    path = tmp_path / "copy.safetensors"
    tensors = {"embed": torch.randn(4, 3).to(torch.bfloat16), "final_norm": torch.ones(3)}
    stamp = {"format": "1", "source_sha256": "abc"}
    _write_cache(path, tensors, stamp)
    back = _read_cache(path, stamp)
    assert back is not None and all(torch.equal(back[k], v) for k, v in tensors.items())
    assert _read_cache(path, {"format": "1", "source_sha256": "another file"}) is None
    path.write_bytes(b"half a file")
    assert _read_cache(path, stamp) is None  # rebuilt by the next load, never an exception
