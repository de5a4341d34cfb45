"""Gemma 3 270M through our core, against transformers loading the same GGUF file as the reference.

The reference (float32, eager attention) reads the file the model package assembles, offline
(``HF_HUB_OFFLINE=1`` before anything imports huggingface_hub); it needs ``accelerate`` and ``gguf``
(requirements-dev.txt). Loading it takes tens of seconds, so it is loaded once for this module. Locally
the comparisons skip, with that reason, when those packages are missing; in CI (``CI=true``) they fail.

Tolerance: 1e-4 on float32 logits (which reach about ±30), on a short prompt at every position and
on a 588-token text (past the 512-token window) at its last 100 positions.
"""

from __future__ import annotations

import importlib.util
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # read by huggingface_hub at import: set before anything imports it
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attention_core.decoder.generate import generate
from attention_core.decoder.gguf_file import GGML_TYPES, read_gguf
from attention_core.decoder.model import KVCache, decoder_mask, forward, load_decoder, logits_of
from attention_core.decoder.quants import dequantize
from attention_core.decoder.run import DecoderRun, head_trace, run_decoder
from attention_core.decoder.texts import LONG_TEXT
from attention_core.decoder.weights import gguf_path

pytestmark = pytest.mark.slow  # the reference takes tens of seconds to load; CI runs these all the same

TOL = 1e-4
SHORT = "The capital of France is"
SENTENCES = [
    SHORT,
    "Hello, world!  Two spaces,\tone tab, and a trailing space ",
    "Numbers: 3.14159, 2,718 and -42; dates like 2024-03-15 or 06:40.",
    "def attention(q, k, v):\n    return softmax(q @ k.T / sqrt(d)) @ v  # (n, d)\n\n\n",
    "Emoji 🙂🚀👩‍💻 and symbols → ≤ ∑ √ ✓",
    "注意力就是你所需要的。日本語のテキストも、한국어도 있습니다.",
    "Ünïcödé àccents, naïve café, straße, Ελληνικά, русский текст.",
    "<start_of_turn>user\nWhat is attention?<end_of_turn>\n<start_of_turn>model\n",
    "Rare characters fall back to bytes: \ue000 \U00010348 \u2fff",
    "   leading spaces and ▁ the visible space itself",
]


def reference_missing(needs: tuple[str, ...]) -> str | None:
    missing = [name for name in needs if importlib.util.find_spec(name) is None]
    if missing:
        return f"decoder reference: transformers needs {' and '.join(missing)} to load a GGUF (requirements-dev.txt)"
    return None


def need_reference(needs: tuple[str, ...] = ("accelerate", "gguf")) -> None:
    reason = reference_missing(needs)
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def ours():
    return load_decoder(dtype=torch.float32, device="cpu")


@pytest.fixture(scope="module")
def reference():
    need_reference()
    import logging

    from transformers import AutoModelForCausalLM

    logging.getLogger("transformers").setLevel(logging.ERROR)
    path = gguf_path()
    model = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    return model.eval()


@pytest.fixture(scope="module")
def reference_tokenizer():
    need_reference()
    from transformers import AutoTokenizer

    path = gguf_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def test_the_tokenizer_matches_the_reference(ours, reference_tokenizer) -> None:
    for text in [*SENTENCES, LONG_TEXT]:
        expected = reference_tokenizer(text)["input_ids"]
        assert ours.tokenizer.encode(text) == expected, text
        assert expected[0] == ours.config.bos_id


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_the_tokenizer_matches_the_reference_on_any_text(ours, reference_tokenizer, text: str) -> None:
    assert ours.tokenizer.encode(text) == reference_tokenizer(text)["input_ids"]


def test_decoding_gives_the_text_back(ours) -> None:
    for text in SENTENCES[:7]:  # no control tokens: decode leaves those out
        assert ours.tokenizer.decode(ours.tokenizer.encode(text)) == text


def test_short_prompt_logits_match_at_every_position(ours, reference) -> None:
    run = run_decoder(ours, SHORT, all_logits=True)
    with torch.no_grad():
        ref = reference(torch.tensor([run.ids])).logits[0]  # (n, vocab)
    assert run.logits.shape == ref.shape == (len(run.ids), 262_144)
    err = float((run.logits - ref).abs().max())
    assert err <= TOL, f"max |Δ| = {err:.2e}"
    assert run.tokens == ["<bos>", "The", " capital", " of", " France", " is"]


def test_long_text_logits_match_past_the_window(ours, reference) -> None:
    ids = ours.tokenizer.encode(LONG_TEXT)
    assert ours.config.window < len(ids) <= 640
    keep = 100
    with torch.inference_mode():
        hidden, _ = forward(ours, torch.tensor([ids]))
        logits = logits_of(ours, hidden[0, -keep:])  # (keep, vocab)
        unwindowed, _ = forward(ours, torch.tensor([ids]), window=False)
        far = logits_of(ours, unwindowed[0, -1])
    with torch.no_grad():
        ref = reference(torch.tensor([ids]), logits_to_keep=keep).logits[0]  # (keep, vocab)
    err = float((logits - ref).abs().max())
    assert err <= TOL, f"max |Δ| = {err:.2e}"
    # the window matters here: without it the last position's logits move far beyond the tolerance
    assert float((far - logits[-1]).abs().max()) > 100 * TOL


def test_the_cache_gives_the_logits_of_recomputing(ours) -> None:
    ids = ours.tokenizer.encode(SENTENCES[2])
    with torch.inference_mode():
        full, _ = forward(ours, torch.tensor([ids]))
        cache = KVCache.empty(ours, len(ids))
        forward(ours, torch.tensor([ids[:6]]), cache)
        steps = [forward(ours, torch.tensor([[t]]), cache)[0][0, -1] for t in ids[6:]]
    err = float((logits_of(ours, torch.stack(steps)) - logits_of(ours, full[0, 6:])).abs().max())
    assert err <= TOL, f"max |Δ| = {err:.2e}"


def test_greedy_generation_matches_the_reference(ours, reference) -> None:
    steps = list(generate(ours, SHORT, 6))
    ids = ours.tokenizer.encode(SHORT)
    with torch.no_grad():
        ref = reference.generate(torch.tensor([ids]), max_new_tokens=6, do_sample=False)[0, len(ids) :]
    assert [s.id for s in steps] == ref.tolist()


def test_attention_in_a_layer_equals_torch_sdpa_with_the_models_mask(ours) -> None:
    run = run_decoder(ours, LONG_TEXT)
    n = len(run.ids)
    for layer in (4, 5):  # a local layer, then the first global one
        a = run.attentions[layer]
        window = None if a.is_global else ours.config.window
        mask = decoder_mask(n, n, window=window, device=torch.device("cpu"))  # (n, n)
        ref = F.scaled_dot_product_attention(a.q, a.k, a.v, attn_mask=mask, scale=ours.config.scale, enable_gqa=True)
        assert torch.allclose(a.weights @ a.v, ref, atol=1e-5)
        assert bool((a.weights[..., ~mask] == 0).all())
        band = a.weights[0, :, -1, : n - ours.config.window]  # the last query's keys 512 or more back
        assert bool((band == 0).all()) != a.is_global
    tr = head_trace(ours, LONG_TEXT, 4, 3)
    assert torch.allclose(tr.weights, run.attentions[4].weights[0, 3], atol=1e-6)


def test_bfloat16_model_agrees_with_float32_on_the_next_token(ours) -> None:
    half = load_decoder(device="cpu")  # bfloat16, from the cached copy after the first load
    assert half.dtype == torch.bfloat16 and half.weights.layers[0].attn_norm.dtype == torch.float32
    a, b = run_decoder(half, SHORT), run_decoder(ours, SHORT)
    assert isinstance(a, DecoderRun) and a.logits.dtype == torch.float32
    assert int(a.logits[-1].argmax()) == int(b.logits[-1].argmax())
    assert float((a.next_token_probs() - b.next_token_probs()).abs().max()) < 0.02


def test_our_dequantisation_equals_ggufs() -> None:
    need_reference(("gguf",))
    import gguf

    f = read_gguf(gguf_path())
    seen = set()
    for name, info in f.tensors.items():
        if info.ggml_type in seen:
            continue
        seen.add(info.ggml_type)
        rows = min(info.shape[0], 64) if len(info.shape) > 1 else 1  # gguf's numpy code is slow: 64 rows
        raw = f.raw(name)[: rows * info.nbytes // (info.shape[0] if len(info.shape) > 1 else 1)]
        ours = dequantize(
            torch.from_numpy(raw.copy()), info.ggml_type, (rows, *info.shape[1:]) if rows > 1 else info.shape
        )
        ref = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType(info.ggml_type))
        assert torch.equal(ours.reshape(-1), torch.from_numpy(ref.copy()).reshape(-1)), name
    assert {GGML_TYPES[t][0] for t in seen} == {"F32", "Q8_0", "Q5_0", "Q4_K", "Q6_K"}
