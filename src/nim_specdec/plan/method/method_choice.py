"""The guide's order of methods: MTP when the target has MTP heads, else a published EAGLE3
draft, else n-gram. Pure over the target's config.json (a dict), the built-in registry and what the vLLM
release knows.

MTP heads count only where the release has an MTP drafter for the target: vLLM serves them by rewriting the
target's model_type (or first architecture) into one of its MTP model types, and a target it does not rewrite
fails at start ("Unsupported speculative method: 'mtp'") whatever its config.json declares (MiniMax-M3's
`minimax_m3` declares num_nextn_predict_layers and no release maps it). Such a target goes on down the order,
and the plan's reason says why.

One exception, where published evidence says otherwise: a built-in entry that registers a DFlash or DSpark head
(a parallel drafter, its publisher's head for that checkpoint, with the published measurement that puts it
ahead of the guide's pick in the entry's `evidence`) is chosen before MTP and EAGLE3. Without such an entry the
guide's order stands (configs/builtin_specdec/README.md, "How the method is chosen").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.engines.protocol.engine import Engine

# Every config.json key vLLM 0.32 reads for the number of MTP layers
# (vllm/config/speculative.py, SpeculativeConfig.hf_config_override; configs/builtin_specdec/MTP_KEYS.md),
# looked for at the top level, then in text_config and mtp_config. num_mtp_layers is the alias
# transformers maps onto num_nextn_predict_layers.
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules", "num_mtp_layers")
_SCOPES = ("text_config", "mtp_config")
# Targets vLLM gives MTP heads without any key (its default count is 1).
MTP_MODEL_TYPES = ("qwen3_next", "longcat_flash", "step3p5", "step3p7", "dots3_note", "minimax_m3_vl")
MTP_ARCHITECTURES = ("MiMoV2ForCausalLM", "MiMoV2OmniForCausalLM", "MiMoV2FlashForCausalLM")

NGRAM_DEFAULT = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
MTP_DEFAULT_TOKENS = 1
DEFAULT_DRAFT_NAME = "draft"


def mtp_heads(config: Mapping[str, Any] | None) -> tuple[str, int] | None:
    """(what declared them, count) when the target has MTP heads, else None.

    The first key found decides, so an explicit 0 (Kimi-K2 ships num_nextn_predict_layers: 0)
    means no heads even for a model type that would otherwise get a default."""
    if not config:
        return None
    scopes = [("", config)] + [(f"{name}.", config[name]) for name in _SCOPES if isinstance(config.get(name), Mapping)]
    for prefix, scope in scopes:
        for key in MTP_KEYS:
            value = scope.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return (f"{prefix}{key}", value) if value > 0 else None
    model_type = config.get("model_type")
    if model_type in MTP_MODEL_TYPES:
        return f"model_type={model_type}", 1
    archs = config.get("architectures") or []
    if archs and archs[0] in MTP_ARCHITECTURES:
        return f"architectures={archs[0]}", 1
    return None


def mtp_drafter(config: Mapping[str, Any] | None, known: Engine) -> str | None:
    """The MTP model type release `known` serves the target's MTP heads with, None where it has none."""
    if not config:
        return None
    archs = config.get("architectures")
    first = archs[0] if isinstance(archs, list) and archs else None
    text = config.get("text_config")
    return known.mtp_drafter(
        config.get("model_type"), first, text.get("model_type") if isinstance(text, Mapping) else None
    )


def draft_method(draft_config: Mapping[str, Any] | None) -> str:
    """The method a draft checkpoint is meant for (EAGLE3 when its config is not known yet).

    The published EAGLE3 drafts do not all say so in `architectures` (yuhuili's says
    LlamaForCausalLM); `draft_vocab_size` and the speculators format mark them too."""
    if not draft_config:
        return "eagle3"
    archs = " ".join(draft_config.get("architectures") or []).lower()
    kind = str(draft_config.get("speculators_model_type", "")).lower()
    if "eagle3" in archs or kind == "eagle3" or "draft_vocab_size" in draft_config:
        return "eagle3"
    if "eagle" in archs or kind == "eagle":
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
    known: Engine,
) -> Choice:
    """Model-free auto choice when speculation is on and nobody gave a config."""
    unknown = " (the target's config.json is not available before download, so MTP heads could not be checked)"
    note = unknown if target_config is None else ""
    parallel = builtin_entry is not None and builtin_entry.draft_source and known.parallel_drafter(builtin_entry.method)
    if parallel and not has_draft_source:
        return Choice(
            dict(builtin_entry.speculative_config),
            f"{builtin_entry.method}: a published {builtin_entry.method} head is registered for "
            f"{builtin_entry.model_id} ({builtin_entry.file}), ahead of the guide's order on published evidence{note}",
            builtin_entry.draft_source,
        )
    heads = mtp_heads(target_config)
    if heads:
        declared, count = heads
        shown = declared if "=" in declared else f"{declared}={count}"
        drafter = mtp_drafter(target_config, known)
        if drafter is not None:
            return Choice(
                {"method": "mtp", "num_speculative_tokens": MTP_DEFAULT_TOKENS},
                f"MTP: the target's config.json declares {shown} ({known.release()} drafts with {drafter})",
            )
        kind = (target_config or {}).get("model_type")
        shown_kind = str(kind)[:60] if isinstance(kind, str) else "(none)"
        note = f" (model type {shown_kind} has an MTP layer ({shown}) but {known.release()} has no MTP drafter for it)"
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
    why = (
        "no registered EAGLE3 draft for this model"
        if heads
        else "no MTP heads and no registered EAGLE3 draft for this model"
    )
    return Choice(dict(NGRAM_DEFAULT), f"ngram: {why}{note}")
