"""The code that reproduces the page's numbers with attention_core, written for the prompt and the head on screen."""

from __future__ import annotations


def decoder_snippet(text: str, temperature: float, layer: int, head: int) -> str:
    """A short script: the next-token probabilities at ``temperature``, one head's weights, the first-token shares."""
    t = f"{temperature:g}"
    return f"""import torch
from attention_core.decoder import load_decoder, run_decoder

model = load_decoder()                       # gemma-3-270m, bfloat16 weights, once per machine
run = run_decoder(model, {text!r})
print(len(run.tokens), "tokens:", run.tokens[:12])

# The next token: softmax(logits / T) at the last position
probs = run.next_token_probs(temperature={t})           # (262144,)
top = probs.topk(10)
for p, i in zip(top.values.tolist(), top.indices.tolist()):
    print(f"{{model.tokenizer.decode([i])!r:>16}} {{p:.4f}}")

# One head's weights: layer {layer}, query head {head} (its K and V are the layer's one shared K/V head)
att = run.attentions[{layer}]
w = att.weights[0, {head}]                          # (n, n), causal{"" if layer in (5, 11, 17) else ", window 512"}
print("global" if att.is_global else "local", w[-1].topk(min(5, w.shape[-1])))

# Attention sinks: each layer's mean share on the first token (rows that can see it)
for l, a in enumerate(run.attentions):
    rows = a.weights[0, :, 1 : (None if a.is_global else model.config.window), 0]   # (heads, rows)
    print(l, "global" if a.is_global else "local ", rows.mean(-1).tolist() if rows.numel() else [])
"""


def decoder_head_snippet(text: str, layer: int, head: int) -> str:
    """The walkthrough's five steps on one gemma-3-270m head, from its real Q, K and V (a literal would be
    thousands of numbers: 256 features a token)."""
    return f"""import math
import torch
from attention_core.decoder import head_inputs, load_decoder

model = load_decoder()
h = head_inputs(model, {text!r}, layer={layer}, head={head})
Q, K, V = h["q"], h["k"], h["v"]                  # (n, 256) each: Q and K after QK-norm and RoPE

scores = Q @ K.T                                  # step 1: (n, n)
scaled = scores / math.sqrt(256)                  # step 2
n = scores.shape[0]
allowed = torch.ones(n, n, dtype=torch.bool).tril()
masked = scaled.masked_fill(~allowed, float('-inf'))  # step 3: causal
weights = masked.softmax(dim=-1)                  # step 4: rows sum to 1
output = weights @ V                              # step 5: (n, 256)
print(weights.round(decimals=3))
"""
