"""The trained model's layer with its softmax swapped: a window wider than the sentence changes nothing,
one narrower than "it"–"animal" cuts the link in every head."""

from __future__ import annotations

import pytest
import torch

from attention_core.bert import load_bert, sentence_weights
from attention_core.efficient import swap_layer

TIRED = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def bert():
    return load_bert(device="cpu")


def test_the_exact_side_is_the_layer_the_model_ran(bert):
    swap = swap_layer(bert, TIRED, 2, "linear")
    tokens, weights = sentence_weights(bert, TIRED)
    assert swap.tokens == tokens and swap.exact.q.shape == (1, 12, len(tokens), 32)
    torch.testing.assert_close(swap.exact.weights[0], weights[2])


def test_a_window_wider_than_the_sentence_changes_nothing(bert):
    swap = swap_layer(bert, TIRED, 3, "window", window=64)
    assert swap.accuracy.relative_error < 1e-6
    torch.testing.assert_close(swap.swapped.output, swap.exact.output)  # every head
    reading = swap.attends_most("it", "animal")
    assert reading.exact_top == reading.variant_top


def test_a_window_narrower_than_the_distance_cuts_it_from_animal(bert):
    swap = swap_layer(bert, TIRED, 3, "window", window=4)
    reading = swap.attends_most("it", "animal")
    assert reading.key - reading.query == -8  # "animal" sits 8 tokens before "it"
    assert reading.exact_heads >= 1  # some head of this layer looks at "animal" most
    assert reading.variant_heads == 0
    assert not swap.swapped.weights[0, :, reading.query, reading.key].any()  # every head: no weight on "animal"
    assert bool(torch.isinf(swap.accuracy.kl).any())  # weight dropped: KL(exact ‖ window) is infinite there


def test_linear_attention_keeps_some_weight_on_animal(bert):
    swap = swap_layer(bert, TIRED, 3, "linear")
    reading = swap.attends_most("it", "animal")
    assert bool((swap.swapped.weights[0, :, reading.query, reading.key] > 0).all())
    assert swap.accuracy.kl is not None and 0 < float(swap.accuracy.kl.mean()) < float("inf")


def test_bad_tokens_and_layers_are_refused(bert):
    swap = swap_layer(bert, TIRED, 0, "window", window=3)
    with pytest.raises(ValueError, match="not one of the tokens"):
        swap.attends_most("it", "zebra")
    with pytest.raises(ValueError, match="not a candidate"):
        swap.attends_most("it", "it")
    with pytest.raises(ValueError, match="layer must be ≤ 5"):
        swap_layer(bert, TIRED, 6, "linear")
