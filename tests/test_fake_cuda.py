"""Every public entry point of the core, on a "cuda" device that is not there.

torch's ``FakeTensorMode`` makes tensors that carry a shape, a dtype and a device but no data, and
it raises ``FakeTensorDeviceMismatchError`` when a tensor made on the CPU meets one on CUDA: the bug
that made the last GPU run fail twenty tests. So this runs on any CI machine and catches it there.
The core's value checks (NaN, overflow, fully masked rows) skip tensors without data
(:func:`attention_core.validation.holds_data`); the shape, dtype and device checks still run.

A CPU-only build of torch (CI's, the Cloud's) can make fake CUDA tensors but cannot index one
(``x[:, :2]`` asks for a CUDA device guard it does not have), so there the table runs on the
``meta`` device instead, under the same fake mode: a tensor made on the CPU meets a meta one with
the same error as a CUDA one (0-d CPU scalars are allowed by both), and every result must land on
meta. With a CUDA build of torch (a GPU box, GPU or not) the fake "cuda" run happens too.

To cover a new entry point, add a line to :data:`ENTRY_POINTS`: a name and a function from the
fake inputs (:class:`Fake`) to whatever the entry point returns. Every tensor in the result
(inside tuples, lists, dicts and dataclasses too) must be on the inputs' device. What needs values (a
sampled token read as an int, a score returned as a float) cannot run here: the comment beside its line
says so, and the line covers the work before it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from tiny_decoder import tiny
from torch._subclasses.fake_tensor import FakeTensorMode

import attention_core as ac
import attention_core.efficient as eff
import attention_core.induction as ind
from attention_core import backward, decoder, kv_cache, tiled, walkthrough
from attention_core.bench import impls, passes
from attention_core.bert import encoder, weights
from attention_core.optim import Optimizer

REAL_CUDA = torch.cuda.is_available()  # read before the fixture pretends CUDA is there


@dataclasses.dataclass(frozen=True)
class Fake:
    """Small fake-CUDA inputs, made inside the fake mode. q ``(2, 4, 9, 8)``, k, v ``(2, 4, 11, 8)``
    (L ≠ S), x ``(2, 9, 16)`` and the weights of 4 heads of width 4 over d_model 16 (2 K/V heads)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    x: torch.Tensor
    w_q: torch.Tensor
    w_k: torch.Tensor
    w_v: torch.Tensor
    w_o: torch.Tensor
    bool_mask: torch.Tensor  # (9, 11)
    float_mask: torch.Tensor  # (2, 1, 9, 11)
    device: str  # "cuda" or "meta": where every result must land


def _make_fake(device: str) -> Fake:
    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device)

    return Fake(
        q=randn(2, 4, 9, 8), k=randn(2, 4, 11, 8), v=randn(2, 4, 11, 8), x=randn(2, 9, 16),
        w_q=randn(16, 16), w_k=randn(16, 8), w_v=randn(16, 8), w_o=randn(16, 16),
        bool_mask=torch.ones(9, 11, dtype=torch.bool, device=device),
        float_mask=torch.zeros(2, 1, 9, 11, device=device), device=device,
    )  # fmt: skip


def _square(f: Fake) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v with L = S (the causal routes of the efficient family need it)."""
    return f.q, f.k[..., :9, :], f.v[..., :9, :]


# Autograd cannot run on fake CUDA tensors in a CPU-only build of torch (its engine asks for a CUDA
# device guard), so the backward passes are called directly: the work, and the device bugs, are there.
def _tiled_backward(f: Fake) -> tuple[torch.Tensor, ...]:
    out, lse = tiled.tiled_attention(f.q, f.k, f.v, f.bool_mask, block_size=4, return_lse=True)
    return tiled._backward(f.q, f.k, f.v, out, lse, torch.ones_like(out), f.bool_mask, False, 0.35, 4)


def _tiled_backward_causal(f: Fake) -> tuple[torch.Tensor, ...]:
    out, lse = tiled.tiled_attention(f.q, f.k, f.v, is_causal=True, block_size=4, return_lse=True)
    return tiled._backward(f.q, f.k, f.v, out, lse, torch.ones_like(out), None, True, 0.35, 4)


def _attention_backward(f: Fake) -> backward.BackwardTrace:
    trace = ac.attention_trace(f.q, f.k, f.v, f.bool_mask, dropout_p=0.1)
    return backward.attention_backward(f.q, f.k, f.v, trace, torch.ones_like(trace.output))


def _self_attention(f: Fake) -> Any:
    with torch.device(f.device):  # parameters made on the device, as a user would with a real GPU
        layer = ac.SelfAttention(16, 4, is_causal=True)
    return layer(f.x), layer(f.x, need_weights=True)


def _decode_with_cache(f: Fake) -> kv_cache.DecodeRun:
    return kv_cache.decode_with_cache(f.x[0, :5], f.w_q, f.w_k, f.w_v, f.w_o, 4, 2)


def _decode_step(f: Fake) -> torch.Tensor:
    q_new = f.q[:, :, :1]  # (2, 4, 1, 8)
    return kv_cache.decode_step(q_new, f.k[:, :2], f.v[:, :2])  # GQA: 2 K/V heads for 4 query heads


def _bench_config(f: Fake) -> impls.BenchConfig:
    config = impls.BenchConfig(impl="tiled", n=16, d=8, heads=2, batch=1, device="cpu")
    object.__setattr__(config, "device", f.device)  # the config accepts only devices that are present
    return config


def _bench_inputs(f: Fake) -> tuple[torch.Tensor, ...]:
    config = _bench_config(f)
    return (*impls.make_inputs(config), passes.grad_out(config))


def _bench_runs(f: Fake) -> dict[str, Any]:
    """Each exact implementation of the benchmark that runs off the CPU (the Triton kernel needs a real GPU)."""
    inputs = impls.make_inputs(_bench_config(f))
    ran = {}
    for name in ("naive", "explained", "tiled"):
        ran[name] = impls.get_impl(name).run(inputs, True)
    return ran


def _bert(f: Fake) -> encoder.EncoderOutput:
    cfg = weights.BertConfig(
        n_layers=2, n_heads=4, d_model=16, d_ff=32, vocab_size=50, max_positions=12, type_vocab_size=2,
        layer_norm_eps=1e-12, pad_id=0,
    )  # fmt: skip

    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=f.device) * 0.1

    def layer() -> weights.LayerWeights:
        D, F = cfg.d_model, cfg.d_ff
        return weights.LayerWeights(
            r(D, D), r(D), r(D, D), r(D), r(D, D), r(D), r(D, D), r(D), r(D), r(D), r(F, D), r(F), r(D, F), r(D),
            r(D), r(D),
        )  # fmt: skip

    w = weights.BertWeights(r(50, 16), r(12, 16), r(2, 16), r(16), r(16), (layer(), layer()))
    bert = encoder.Bert(config=cfg, weights=w, tokenizer=None)
    ids = torch.randint(0, 50, (2, 7), device=f.device)
    mask = torch.ones(2, 7, dtype=torch.long, device=f.device)
    return encoder.bert_forward(bert, ids, mask), encoder.bert_forward(bert, ids, None, trace=False)


def _bigbird(f: Fake, n: int) -> eff.MaskMod:
    """BigBird's random blocks are drawn from values (a seed's CPU draw), which fake tensors do not hold: the
    fixture draws them before the fake mode starts, and the cached builder returns that pattern here."""
    if f.device != "meta":
        pytest.skip("the random blocks are drawn before the fake mode, on a device that must exist")
    return eff.bigbird(2, 1, 1, 4, 0, n=n, device=f.device)


def _walkthrough(f: Fake) -> Any:
    mask, _ = walkthrough.build_mask("causal", 5, 5, 0, torch.device(f.device))
    return mask


# -- the decoder: the tiny random Gemma-shaped model of the core tests (the real 270M is not loaded here), its
# window of 4 tokens shorter than the 9-token text, so the local layers' band mask is built and applied too
TEXT = "ab c abc a b"  # 9 tokens with <bos>


def _decoder(f: Fake) -> decoder.Decoder:
    return tiny(n_kv_heads=2, window=4, device=f.device)


def _ids(f: Fake, n: int) -> torch.Tensor:
    return torch.randint(4, 20, (1, n), device=f.device)  # (1, n)


def _decoder_cache(f: Fake) -> tuple[Any, ...]:
    """A prompt longer than the window into the KV cache, then three traced steps of one token each."""
    model = _decoder(f)
    cache = decoder.KVCache.empty(model, 9)
    prompt = decoder.forward(model, _ids(f, 6), cache)
    steps = [decoder.forward(model, _ids(f, 1), cache, trace=True) for _ in range(3)]
    return prompt, steps, cache


def _decoder_next_token(f: Fake) -> tuple[torch.Tensor, ...]:
    """What generate() computes for one step, up to the choice. generate() itself cannot run without data: its
    seeded torch.Generator lives on the model's device (torch has none on meta), and the chosen token is read
    as a Python int (int(multinomial(...)) or int(argmax)), which is a value. Everything before it runs here."""
    model = _decoder(f)
    cache = decoder.KVCache.empty(model, 9)
    decoder.forward(model, _ids(f, 7), cache)  # the prompt but its last token
    hidden, records = decoder.forward(model, _ids(f, 1), cache, trace=True)  # (1, 1, D)
    logits = decoder.logits_of(model, hidden[0, -1])  # (vocab,)
    shown = decoder.probabilities(logits, 0.7)  # (vocab,)
    top_p, top_i = shown.topk(10)
    row = torch.stack([r.weights[0, :, -1, :] for r in records])  # (n_layers, h, n_ctx)
    greedy = decoder.probabilities(logits, 0.0)  # (vocab,) one-hot on the argmax
    return logits, shown, torch.multinomial(shown, 1), logits.argmax(), top_p, top_i, row, greedy


# -- the induction model: weights drawn on the device by hand (init_weights has its own line below)
SMALL = ind.InductionConfig(vocab=12, half=5, d_model=16, n_heads=2, layers=2)


def _induction(f: Fake) -> ind.InductionWeights:
    def r(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, device=f.device) * 0.3).requires_grad_(True)

    layers = tuple(ind.LayerWeights(r(16, 16), r(16, 16), r(16, 16), r(16, 16)) for _ in range(2))
    return ind.InductionWeights(SMALL, r(12, 16), r(10, 16), layers, r(16, 12))


def _seeded_on(f: Fake) -> None:
    """A seeded draw makes a torch.Generator on the device: a real one, which fake CUDA has only on a GPU box."""
    if f.device == "cuda" and not REAL_CUDA:
        pytest.skip("a CUDA generator needs a CUDA device that is really there")


def _induction_tokens(f: Fake) -> torch.Tensor:
    return ind.repeated_tokens(3, SMALL.half, SMALL.vocab, device=f.device)  # (3, 10)


def _induction_step(f: Fake) -> tuple[Any, ...]:
    """One training step of train()'s loop: forward, the loss, backward, AdamW. The loop itself reads values
    (each batch's block length is a Python int drawn from the generator; each record's losses and scores are
    floats on the CPU), so it cannot run without data."""
    w = _induction(f)
    tokens = _induction_tokens(f)  # (3, 10)
    opt = Optimizer(w.parameters(), "adam", 5e-3, 0.01)
    logits = ind.forward(w, tokens).logits  # (3, 10, V)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, SMALL.vocab), tokens[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    return loss, w, opt.m, opt.v


def _induction_scores(f: Fake) -> tuple[torch.Tensor, ...]:
    """The scores that are tensors. copying_score(s) and head_scores return Python floats or CPU tensors, read
    from values: not coverable here."""
    w = _induction(f)
    fw = ind.forward(w, _induction_tokens(f), keep=True)
    assert fw.patterns is not None
    return (
        *(ind.previous_token_score(p) for p in fw.patterns),
        *(ind.prefix_matching_score(p, SMALL.half) for p in fw.patterns),
        ind.ov_logits(w, 1, 0),
    )


# name → function from the fake inputs to the entry point's result
ENTRY_POINTS: dict[str, Callable[[Fake], Any]] = {
    # the attention of the core: explained, lean, textbook, reference, tiled
    "attention_trace": lambda f: ac.attention_trace(f.q, f.k, f.v, f.bool_mask, dropout_p=0.1),
    "attention_trace causal": lambda f: ac.attention_trace(f.q, f.k, f.v, is_causal=True),
    "dot_product_attention": lambda f: ac.dot_product_attention(f.q, f.k, f.v, f.float_mask, 0.1),
    "dot_product_attention causal": lambda f: ac.dot_product_attention(f.q, f.k, f.v, is_causal=True),
    "stable_softmax": lambda f: ac.stable_softmax(f.q),
    "row_entropy": lambda f: ac.row_entropy(torch.softmax(f.q, -1)),
    "textbook_attention": lambda f: ac.textbook_attention(f.q, f.k, f.v, f.bool_mask),
    "textbook_attention causal": lambda f: ac.textbook_attention(f.q, f.k, f.v, is_causal=True),
    "reference_attention": lambda f: ac.reference_attention(f.q, f.k, f.v, f.float_mask),
    "tiled_attention": lambda f: ac.tiled_attention(f.q, f.k, f.v, f.float_mask, block_size=4),
    "tiled_attention causal": lambda f: ac.tiled_attention(f.q, f.k, f.v, is_causal=True, block_size=4),
    "tiled_attention lse": lambda f: tiled.tiled_attention(f.q, f.k, f.v, block_size=4, return_lse=True),
    "tiled_attention backward": _tiled_backward,
    "tiled_attention backward causal": _tiled_backward_causal,
    "attention_backward": _attention_backward,
    # masks
    "causal_mask": lambda f: ac.causal_mask(9, 11, device=f.device),
    "padding_mask": lambda f: ac.padding_mask([3, 11], 11, device=f.device),
    "padding_mask from a tensor": lambda f: ac.padding_mask(torch.tensor([3, 11], device=f.device), 11),
    "walkthrough build_mask": _walkthrough,
    # heads, layers and decoding
    "split_heads / merge_heads": lambda f: ac.merge_heads(ac.split_heads(f.x, 4)),
    "repeat_kv": lambda f: ac.repeat_kv(f.k[:, :2], 4),
    "mean_pool_kv": lambda f: ac.mean_pool_kv(f.w_q, 4, 2),
    "multi_head_attention": lambda f: ac.multi_head_attention(f.x, f.w_q, f.w_k, f.w_v, f.w_o, 4, 2, is_causal=True),
    "multi_head_trace": lambda f: ac.multi_head_trace(
        f.x, f.w_q, f.w_k, f.w_v, f.w_o, 4, 2, attn_mask=f.bool_mask[:, :9]
    ),
    "project_qkv": lambda f: ac.project_qkv(f.x, f.w_q, f.w_q, f.w_v),
    "sinusoidal_positions": lambda f: ac.sinusoidal_positions(9, 16, device=f.device),
    "SelfAttention": _self_attention,
    "decode_step": _decode_step,
    "decode_with_cache": _decode_with_cache,
    # the efficient routes and their patterns
    "random_qkv": lambda f: eff.random_qkv(9, 8, heads=2, device=f.device),
    "performer_attention": lambda f: eff.performer_attention(f.q, f.k, f.v, features=16, seed=0),
    "performer_attention causal": lambda f: eff.performer_attention(*_square(f), features=16, seed=0, is_causal=True),
    "orthogonal_features": lambda f: eff.orthogonal_features(16, 8, seed=0, device=f.device),
    "linear_attention": lambda f: eff.linear_attention(f.q, f.k, f.v),
    "linear_attention causal": lambda f: eff.linear_attention(*_square(f), is_causal=True),
    "linear_attention_recurrent": lambda f: eff.linear_attention_recurrent(*_square(f)),
    "linformer_attention": lambda f: eff.linformer_attention(f.q, f.k, f.v, rank=4, seed=0),
    "dense_mask": lambda f: eff.dense_mask(eff.and_masks(eff.sliding_window(2), eff.causal()), 9, 11, device=f.device),
    "bigbird dense_mask": lambda f: eff.dense_mask(_bigbird(f, 12), 12, 12, device=f.device),
    "masked_attention": lambda f: eff.masked_attention(f.q, f.k, f.v, eff.sliding_window(2), backend="dense"),
    "variant_attention dilated": lambda f: eff.variant_attention(*_square(f), "dilated", window=2, dilation=2),
    "variant_attention window": lambda f: eff.variant_attention(*_square(f), "window", window=2),
    "variant_attention bigbird": lambda f: (
        _bigbird(f, 9), eff.variant_attention(*_square(f), "bigbird", window=2, block=4)
    ),
    "variant_attention performer": lambda f: eff.variant_attention(*_square(f), "performer", features=16),
    "variant_attention linformer": lambda f: eff.variant_attention(*_square(f), "linformer", rank=4),
    "variant_attention linear": lambda f: eff.variant_attention(*_square(f), "linear", is_causal=True),
    # the encoder and the benchmark's inputs and runs
    "bert_forward": _bert,
    "bench make_inputs / grad_out": _bench_inputs,
    "bench runs": _bench_runs,
    # the decoder (Gemma-shaped, tiny): forward with and without the trace and the window, the KV cache, logits,
    # next-token probabilities, a prompt's run, one head's inputs and five steps
    "decoder forward": lambda f: decoder.forward(_decoder(f), _ids(f, 9)),
    "decoder forward traced": lambda f: decoder.forward(_decoder(f), _ids(f, 9), trace=True),
    "decoder forward traced, no window": lambda f: decoder.forward(_decoder(f), _ids(f, 9), trace=True, window=False),
    "decoder forward keep_input_of": lambda f: decoder.forward(_decoder(f), _ids(f, 9), keep_input_of=2, stop_after=2),
    "decoder KV cache": _decoder_cache,
    "decoder_mask": lambda f: decoder.decoder_mask(3, 9, window=4, device=torch.device(f.device)),
    "decoder next token (generate up to the choice)": _decoder_next_token,
    "decoder logits_of rows": lambda f: decoder.logits_of(_decoder(f), torch.randn(3, 16, device=f.device)),
    "run_decoder": lambda f: (r := decoder.run_decoder(_decoder(f), TEXT, all_logits=True), r.next_token_probs(0.5)),
    "run_decoder no window": lambda f: decoder.run_decoder(_decoder(f), TEXT, sliding_window=False),
    "head_inputs local": lambda f: decoder.head_inputs(_decoder(f), TEXT, 3, 2),
    "head_inputs global": lambda f: decoder.head_inputs(_decoder(f), TEXT, 5, 0),
    "head_trace local": lambda f: decoder.head_trace(_decoder(f), TEXT, 3, 2),
    "head_trace no window": lambda f: decoder.head_trace(_decoder(f), TEXT, 0, 1, sliding_window=False),
    # the induction model: its task, forward (kept patterns, ablation, no causal mask), losses, scores, a step
    "induction repeated_tokens": _induction_tokens,
    "induction eval_tokens": lambda f: (_seeded_on(f), ind.eval_tokens(SMALL, seed=3, device=f.device)),
    "induction init_weights": lambda f: (_seeded_on(f), ind.init_weights(SMALL, seed=3, device=f.device)),
    "induction forward": lambda f: ind.forward(_induction(f), _induction_tokens(f)),
    "induction forward kept": lambda f: ind.forward(_induction(f), _induction_tokens(f), keep=True),
    "induction forward ablated": lambda f: ind.forward(
        _induction(f), _induction_tokens(f), ablate=[(0, 1), (1, 0)], keep=True, causal=False
    ),
    "induction half_losses": lambda f: ind.half_losses(
        ind.forward(_induction(f), _induction_tokens(f)).logits, _induction_tokens(f), SMALL.half
    ),
    "induction scores": _induction_scores,
    "induction training step": _induction_step,
}


def _tensors(result: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor inside ``result``, with a path to it."""
    if isinstance(result, torch.Tensor):
        yield "", result
    elif dataclasses.is_dataclass(result) and not isinstance(result, type):
        for field in dataclasses.fields(result):
            for path, t in _tensors(getattr(result, field.name)):
                yield f".{field.name}{path}", t
    elif isinstance(result, dict):
        for key, value in result.items():
            for path, t in _tensors(value):
                yield f"[{key!r}]{path}", t
    elif isinstance(result, (tuple, list)):
        for i, value in enumerate(result):
            for path, t in _tensors(value):
                yield f"[{i}]{path}", t


DEVICES = [
    pytest.param("meta", id="meta"),
    pytest.param(
        "cuda",
        id="fake-cuda",
        marks=pytest.mark.skipif(
            not torch.backends.cuda.is_built(), reason="a CPU-only torch cannot index a fake CUDA tensor"
        ),
    ),
]


_BUILDERS = [b for b in vars(eff).values() if callable(getattr(b, "cache_clear", None))]  # the cached patterns


@pytest.fixture(params=DEVICES)
def fake(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    device = request.param
    if device == "cuda":  # the device helper asks torch whether CUDA is there before it accepts "cuda"
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    # Pattern builders are cached with the tensors they hold: none may carry a fake from another test.
    for builder in _BUILDERS:
        builder.cache_clear()
    if device == "meta":
        for n in (9, 12):
            eff.bigbird(2, 1, 1, 4, 0, n=n, device=device)  # see _bigbird
    # allow_non_fake_inputs: a tensor made before the mode (the BigBird table) joins as a fake on its device,
    # so it still raises if that device is the wrong one
    with FakeTensorMode(allow_non_fake_inputs=True):
        yield _make_fake(device)
    for builder in _BUILDERS:
        builder.cache_clear()


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_every_result_lands_on_the_inputs_device(fake: Fake, name: str) -> None:
    result = ENTRY_POINTS[name](fake)
    found = list(_tensors(result))
    assert found, f"{name} returned no tensor"
    elsewhere = [f"{name}{path} on {t.device}" for path, t in found if t.device.type != fake.device]
    assert not elsewhere, elsewhere


def test_a_cpu_tensor_meeting_a_foreign_one_is_caught(fake: Fake) -> None:
    """The test can fail: the fake mode does raise when two devices meet, so a silent pass means something."""
    with pytest.raises(Exception, match="device"):
        fake.q + torch.ones(8)
