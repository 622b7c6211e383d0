"""Pure readings of a model's `config.json` (as a dict): sizes, dtype, KV geometry, length.

Each function follows what vLLM 0.32 itself reads, so that a figure here matches the one vLLM
will use: multimodal checkpoints keep the language model's fields under `text_config`,
EAGLE3 drafts in the `speculators` format keep theirs under `transformer_layer_config`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

Config = Mapping[str, Any]

# vLLM's derive_max_model_len_and_key: the smallest of these is the model's length limit.
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# RoPE types whose max_position_embeddings is already scaled; vLLM multiplies the others by `factor`.
PRESCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")

_DTYPE_BYTES = {"float16": 2, "half": 2, "fp16": 2, "bfloat16": 2, "bf16": 2, "float32": 4, "float": 4}


def text_config(cfg: Config) -> Config:
    inner = cfg.get("text_config")
    return inner if isinstance(inner, Mapping) else cfg


def draft_view(cfg: Config) -> Config:
    """A draft's config as vLLM sees it: a speculators-format file is flattened first."""
    if "speculators_model_type" not in cfg:
        return cfg
    flat = dict(cfg.get("transformer_layer_config") or {})
    for key in ("draft_vocab_size", "target_hidden_size", "eagle_aux_hidden_state_layer_ids"):
        if cfg.get(key) is not None:
            flat[key] = cfg[key]
    flat["speculators_model_type"] = cfg["speculators_model_type"]
    if cfg.get("architectures") and "architectures" not in flat:
        flat["architectures"] = cfg["architectures"]
    return flat


def first(cfg: Config, *keys: str) -> Any:
    """The first key present (not None) in the config or its text_config."""
    for source in (cfg, text_config(cfg)):
        for key in keys:
            if source.get(key) is not None:
                return source[key]
    return None


def hidden_size(cfg: Config) -> int | None:
    return first(cfg, "hidden_size", "d_model", "n_embd")


def vocab_size(cfg: Config) -> int | None:
    return first(cfg, "vocab_size", "padded_vocab_size")


def architectures(cfg: Config) -> tuple[str, ...]:
    return tuple(cfg.get("architectures") or ())


def dtype_bytes(name: str | None, default: int = 2) -> int:
    """Bytes per element of a dtype or kv_cache_dtype name ('auto' and unknown names give `default`)."""
    if not name or name == "auto":
        return default
    name = str(name).lower().removeprefix("torch.")
    if name.startswith("fp8") or name.startswith("float8") or name in ("int8", "uint8"):
        return 1
    return _DTYPE_BYTES.get(name, default)


def model_dtype_bytes(cfg: Config, requested: str | None = None) -> int:
    """Bytes per element vLLM computes in: the --dtype asked for, else the checkpoint's own."""
    if requested and requested != "auto":
        return dtype_bytes(requested)
    # vLLM's "auto" serves a float32 checkpoint in a 16-bit type.
    return min(2, dtype_bytes(first(cfg, "dtype", "torch_dtype")))


def kv_bytes_per_token(cfg: Config, layers: int, elem_bytes: int, tp: int = 1) -> int:
    """KV-cache bytes one token costs on one GPU across `layers` attention layers of this geometry."""
    if first(cfg, "kv_lora_rank") is not None:
        # MLA caches one compressed latent plus the rope key per layer, replicated on every TP rank.
        per_layer = int(first(cfg, "kv_lora_rank")) + int(first(cfg, "qk_rope_head_dim") or 0)
        return layers * per_layer * elem_bytes
    heads = int(first(cfg, "num_attention_heads", "n_head") or 1)
    kv_heads = int(first(cfg, "num_key_value_heads", "num_kv_heads") or heads)
    head_dim = first(cfg, "head_dim")
    head_dim = int(head_dim) if head_dim else int(hidden_size(cfg) or 0) // heads
    # Fewer KV heads than TP ranks: each rank keeps a replica of one head.
    kv_heads_per_rank = max(1, math.ceil(kv_heads / max(1, tp)))
    return 2 * layers * kv_heads_per_rank * head_dim * elem_bytes


def num_layers(cfg: Config) -> int:
    return int(first(cfg, "num_hidden_layers", "n_layer", "num_layers") or 0)


def attention_layers(cfg: Config) -> int:
    """Decoder layers that keep a per-token KV cache; hybrid models' linear-attention layers keep none."""
    layer_types = first(cfg, "layer_types")
    if isinstance(layer_types, list) and layer_types:
        return sum(1 for kind in layer_types if "linear" not in str(kind) and "mamba" not in str(kind))
    interval = first(cfg, "full_attention_interval")
    if isinstance(interval, int) and interval > 0:
        return num_layers(cfg) // interval
    return num_layers(cfg)


def derived_max_model_len(cfg: Config) -> int | None:
    """The default max_model_len vLLM derives from the config when none is given."""
    tc = text_config(cfg)
    found = [int(tc[k]) for k in MAX_LEN_KEYS if isinstance(tc.get(k), (int, float))]
    if not found:
        return None
    length = int(tc["model_max_length"]) if isinstance(tc.get("model_max_length"), (int, float)) else min(found)
    rope = tc.get("rope_scaling") or tc.get("rope_parameters") or {}
    if isinstance(rope, Mapping):
        rope_type = rope.get("rope_type", rope.get("type"))
        if rope_type not in PRESCALED_ROPE and rope_type not in (None, "default") and rope.get("factor"):
            length = int(length * float(rope["factor"]))
    return length
