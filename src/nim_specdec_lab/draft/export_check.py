"""Is the target one an EAGLE3 head can be trained for, and does the export fit it? Pure, over config dicts.

Before training: the target must be a decoder whose hidden states the library reads (its architecture in
TRAINABLE_ARCHITECTURES, the families the EAGLE3 trainers and vLLM's EAGLE3 drafts support) with a hidden
size, a vocabulary and a layer count. After training: the export passes the launcher's own pre-flight checks
for an EAGLE3 draft (generation, architecture, hidden size, vocabulary: preflight.compat_eagle), and each
auxiliary layer it reads is a hidden state the target has (0, the embeddings, to L, after the last layer:
vLLM captures layer i's input, and L as the final output). The training stage runs its own checks of both too.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nim_specdec.errors import ConfigError
from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.checkpoint import Checkpoint
from nim_specdec.preflight.compat_eagle import eagle_checks
from nim_specdec.preflight.results import FAIL

# The model types the training stage drives (decoder layers under model.layers, a Llama-style head) and whose
# vLLM implementation hands auxiliary hidden states to an EAGLE3 draft: the training stage checks the same.
TRAINABLE_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe")
WHERE = "--target"


def target_problem(target: Mapping[str, Any]) -> str | None:
    """Why an EAGLE3 head cannot be trained for this target, or None."""
    model_type = str(target.get("model_type"))[:40]
    if model_type not in TRAINABLE_MODEL_TYPES or "text_config" in target:
        shown = ", ".join(mc.architectures(target))[:80] or "no architectures"
        return f"model_type {model_type!r} ({shown}) is not one an EAGLE3 head is trained for"
    for name in ("hidden_size", "vocab_size", "num_hidden_layers"):
        value = target.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            return f"its config.json gives no usable {name}"
    return None


def refuse_untrainable(target: Mapping[str, Any], target_dir: str) -> None:
    problem = target_problem(target)
    if problem:
        supported = ", ".join(TRAINABLE_MODEL_TYPES)
        raise ConfigError(
            WHERE, f"{target_dir}: {problem}", f"train for a {supported} model, or bring a draft trained elsewhere"
        )


def train_aux_problem(aux: Sequence[int], layers: int) -> str | None:
    """The layers a head is trained to read: distinct layer outputs 1 to L (the embeddings, 0, have no hook)."""
    if not aux or len(set(aux)) != len(aux) or any(not 1 <= a <= layers for a in aux):
        return f"auxiliary layers {list(aux)} are not distinct layers of a {layers}-layer target (1 to {layers})"
    return None


def aux_problem(aux: Sequence[Any] | None, layers: int) -> str | None:
    if aux is None:
        return None
    bad = [a for a in aux if not isinstance(a, int) or isinstance(a, bool) or not 0 <= a <= layers]
    if bad:
        return (
            f"auxiliary layers {list(aux)} name {bad[:4]}, which a {layers}-layer target does not have (0 to {layers})"
        )
    return None


def export_problems(
    draft: Mapping[str, Any], ckpt: Checkpoint | None, target: Mapping[str, Any], where: str
) -> list[str]:
    """The export's problems as one-line messages (empty: it serves)."""
    out = [c.message for c in eagle_checks("eagle3", draft, ckpt, target, where) if c.result == FAIL]
    view = mc.draft_view(draft)
    aux = view.get("eagle_aux_hidden_state_layer_ids")
    if aux is None:
        aux = (view.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    problem = aux_problem(aux, int(mc.first(target, "num_hidden_layers") or 0))
    if problem:
        out.append(f"{where}: {problem}")
    if ckpt is None:
        out.append(f"{where}: the export holds no weights")
    return out
