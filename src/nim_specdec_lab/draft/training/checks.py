"""Pure checks around a training run: which targets the library can train a head for, which auxiliary layers the
head reads, how many bytes the run writes, and whether an exported draft fits its target as vLLM will load it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.checkpoint import Checkpoint
from nim_specdec.preflight.compat_eagle import eagle_checks
from nim_specdec.preflight.results import FAIL
from nim_specdec_lab.draft.training.errors import DiskTooSmallError, TrainingFailedError, UnsupportedTargetError

# Targets whose Hugging Face model Model Optimizer's EAGLE3 plugin drives (decoder layers under model.layers, a
# Llama-style head) and whose vLLM 0.32 implementation hands auxiliary hidden states to an EAGLE3 draft.
TRAINABLE_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe")
_OTHER_TARGET = (
    "train on a Llama, Mistral or Qwen2/3 text model, or bring a draft trained elsewhere (NIM_DRAFT_MODEL_PATH)"
)


@dataclass(frozen=True)
class TargetShape:
    model_type: str
    layers: int
    hidden: int
    vocab: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int


def target_shape(config: Mapping[str, Any], where: str) -> TargetShape:
    """The target's shape from its config.json; UnsupportedTargetError when the library cannot train a head for it."""
    model_type = str(config.get("model_type"))
    if model_type not in TRAINABLE_MODEL_TYPES or "text_config" in config:
        raise UnsupportedTargetError(
            where, f"model_type {model_type!r} has no EAGLE3 training path here", _OTHER_TARGET
        )
    numbers = {}
    for key in ("num_hidden_layers", "hidden_size", "vocab_size", "intermediate_size", "num_attention_heads"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise UnsupportedTargetError(where, f"config.json has no usable {key} ({value!r})", _OTHER_TARGET)
        numbers[key] = value
    heads = numbers["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or numbers["hidden_size"] // heads
    if not isinstance(kv_heads, int) or not isinstance(head_dim, int) or kv_heads <= 0 or head_dim <= 0:
        raise UnsupportedTargetError(where, "config.json has no usable num_key_value_heads or head_dim", _OTHER_TARGET)
    if numbers["vocab_size"] < 2:
        raise UnsupportedTargetError(where, f"a vocabulary of {numbers['vocab_size']} token", _OTHER_TARGET)
    return TargetShape(
        model_type,
        numbers["num_hidden_layers"],
        numbers["hidden_size"],
        numbers["vocab_size"],
        numbers["intermediate_size"],
        heads,
        int(kv_heads),
        int(head_dim),
    )


def choose_aux_layers(layers: int, requested: tuple[int, ...] | None, where: str) -> tuple[int, ...]:
    """The hidden states the head reads, in vLLM's numbering (0 the embeddings, k the output of layer k).

    Model Optimizer hooks layer outputs, so 0 cannot be trained for. Default: vLLM's own (2, L//2, L-3) where
    the target is deep enough for them to be distinct, else the first, middle and last layers' outputs."""
    if requested is None:
        default = (2, layers // 2, layers - 3)
        chosen = default if layers >= 8 else tuple(sorted({1, max(1, layers // 2), layers}))
    else:
        chosen = tuple(requested)
    if not chosen or len(set(chosen)) != len(chosen) or any(i < 1 or i > layers for i in chosen):
        raise UnsupportedTargetError(
            where,
            f"auxiliary layers {list(chosen)} do not exist in a {layers}-layer target",
            f"choose distinct layers from 1 to {layers}",
        )
    return chosen


def head_parameters(shape: TargetShape, aux_layers: int) -> int:
    """Parameters of a one-layer EAGLE3 head: fc over the aux states, a decoder layer reading 2H, norms, lm_head."""
    h, q, kv = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    attention = q * 2 * h + 2 * kv * 2 * h + h * q
    return aux_layers * h * h + attention + 3 * h * shape.intermediate + shape.vocab * h + 4 * h


def hidden_state_bytes(tokens: int, hidden: int, states: int, dtype_bytes: int = 2) -> int:
    """What an offline run would store: every token's hidden state at each aux layer plus the last one."""
    return tokens * hidden * states * dtype_bytes


def work_bytes(target_weight_bytes: int, head_params: int, kept_checkpoints: int = 2) -> int:
    """What an online run writes at its peak. Each Trainer checkpoint holds the whole converted model (target and
    head, float32 on a CPU: up to twice a 16-bit target's bytes) and the head's optimizer moments (two floats a
    parameter); one more checkpoint is being written while the kept ones still exist; then the export."""
    checkpoint = 2 * target_weight_bytes + 4 * head_params + 8 * head_params
    return (kept_checkpoints + 1) * checkpoint + 4 * head_params


def check_disk(free_bytes: int, needed_bytes: int, where: str) -> None:
    if free_bytes < needed_bytes:
        raise DiskTooSmallError(
            where,
            f"training needs about {needed_bytes / 2**20:.1f} MiB for checkpoints and the export, "
            f"{free_bytes / 2**20:.1f} MiB are free",
            "free space there or choose a work directory on a larger volume",
        )


def check_export(
    draft_config: Mapping[str, Any], weights: Checkpoint | None, target: Mapping[str, Any], where: str
) -> None:
    """The launcher's own EAGLE3 pre-flight checks plus the auxiliary layers: TrainingFailedError on any failure."""
    problems = [c.message for c in eagle_checks("eagle3", draft_config, weights, target, where) if c.result == FAIL]
    layers = mc.num_layers(target)
    aux = (draft_config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    if not isinstance(aux, list) or not aux or any(not isinstance(i, int) or i < 0 or i > layers for i in aux):
        problems.append(f"{where}: auxiliary layers {aux!r} do not exist in the {layers}-layer target")
    if problems:
        raise TrainingFailedError(where, f"the export does not fit its target: {problems[0]}", "report this as a bug")
