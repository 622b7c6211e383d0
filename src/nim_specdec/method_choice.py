"""The guide's order of methods: MTP when the target has MTP heads, else a published EAGLE3
draft, else n-gram. Pure over the target's config.json (a dict) and the built-in registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# Every config.json key vLLM 0.32 reads for the number of MTP layers (vllm/config/speculative.py,
# SpeculativeConfig.hf_config_override), looked for at the top level and in text_config.
# num_mtp_modules is read by other releases and serving stacks for the same purpose.
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")

NGRAM_DEFAULT = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
MTP_DEFAULT_TOKENS = 1
DEFAULT_DRAFT_NAME = "draft"


def mtp_heads(config: Mapping[str, Any] | None) -> tuple[str, int] | None:
    """(key, count) of the first MTP declaration with a positive count, or None."""
    if not config:
        return None
    scopes = [config]
    if isinstance(config.get("text_config"), Mapping):
        scopes.append(config["text_config"])
    for scope in scopes:
        for key in MTP_KEYS:
            value = scope.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return key, value
    return None


def draft_method(draft_config: Mapping[str, Any] | None) -> str:
    """The method a draft checkpoint is meant for, from its architectures (EAGLE3 when unknown)."""
    archs = " ".join((draft_config or {}).get("architectures") or []).lower()
    if not draft_config or "eagle3" in archs:
        return "eagle3"
    if "eagle" in archs:
        return "eagle"
    return "draft_model"


@dataclass(frozen=True)
class Choice:
    config: dict[str, Any]
    reason: str
    draft_source: str | None = None  # the built-in draft URI, when the choice brings one


def choose(
    target_config: Mapping[str, Any] | None,
    builtin_entry: Any | None,
    has_draft_source: bool,
    draft_config: Mapping[str, Any] | None,
) -> Choice:
    """Model-free auto choice when speculation is on and nobody gave a config."""
    heads = mtp_heads(target_config)
    if heads:
        key, count = heads
        return Choice(
            {"method": "mtp", "num_speculative_tokens": MTP_DEFAULT_TOKENS},
            f"MTP: the target's config.json declares {key}={count}",
        )
    unknown = " (the target's config.json is not available before download, so MTP heads could not be checked)"
    note = unknown if target_config is None else ""
    if has_draft_source:
        method = draft_method(draft_config)
        return Choice(
            {"method": method, "model": DEFAULT_DRAFT_NAME, "num_speculative_tokens": 3},
            f"{method}: NIM_DRAFT_MODEL_PATH names a draft and no config was given{note}",
        )
    if builtin_entry is not None and builtin_entry.draft_source:
        return Choice(
            dict(builtin_entry.speculative_config),
            f"{builtin_entry.method}: a published draft is registered for {builtin_entry.model_id}"
            f" ({builtin_entry.file}){note}",
            builtin_entry.draft_source,
        )
    return Choice(dict(NGRAM_DEFAULT), f"ngram: no MTP heads and no registered EAGLE3 draft for this model{note}")
