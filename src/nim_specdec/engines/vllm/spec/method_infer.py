"""The speculative method vLLM infers when a config names a draft but no method
(vllm/config/speculative.py, SpeculativeConfig.__post_init__), mirrored so the plan can say which method
will run and so a draft path the launcher rewrites keeps the method its original reference implied."""

from __future__ import annotations

from typing import Any, Mapping

from nim_specdec.engines.vllm.release.methods import method_row, rows
from nim_specdec.engines.vllm.release.vllm_schema import DEFAULT, VllmKnowledge

# The default release's MTP method names (its SpeculativeConfig.method literal); a model_type of such a
# name uses MTP. Each release's own list: VllmKnowledge.mtp_methods.
MTP_METHODS = DEFAULT.mtp_methods


def is_custom_proposer(model: Any) -> bool:
    if not isinstance(model, str) or model.startswith(("http://", "https://", "file://")) or "/" in model:
        return False
    parts = model.split(".")
    return len(parts) >= 2 and all(part.isidentifier() for part in parts)


def infer_method(model: Any, draft_config: Mapping[str, Any] | None, known: VllmKnowledge = DEFAULT) -> str | None:
    """What vLLM runs for {"model": model} without a method; None without a model."""
    if model is None:
        return None
    if is_custom_proposer(model) and "custom_class" in known.methods:  # 0.34 removed it: a path, as any other
        return "custom_class"
    if model in ("ngram", "[ngram]"):
        return "ngram"
    name = str(model).lower()
    config = draft_config or {}
    archs = config.get("architectures") or []
    model_type = config.get("model_type")
    for row in rows():
        if any(part in name for part in row.inferred_from_name) or any(a in archs for a in row.inferred_from_arch):
            return row.name
    if "DSparkDraftModel" in archs and model_type == "qwen3":  # DSpark's generic class, told apart by the type
        return "dspark"
    row = method_row(model_type)
    if row is not None and row.inferred_from_model_type and model_type in known.methods:  # medusa: gone in 0.33
        return model_type
    if model_type in known.mtp_methods:
        return "mtp"
    return "draft_model"


def effective_method(
    config: Mapping[str, Any], draft_config: Mapping[str, Any] | None = None, known: VllmKnowledge = DEFAULT
) -> str | None:
    """The method vLLM settles on: the given one (MTP aliases become "mtp"), else the inferred one."""
    method = config.get("method")
    if method is None:
        return infer_method(config.get("model"), draft_config, known) or "draft_model"
    if method in known.mtp_methods:
        return "mtp"
    if method == "draft_model" and config.get("model") is not None:
        return infer_method(config.get("model"), draft_config, known)  # vLLM refines draft_model by the draft too
    return method
