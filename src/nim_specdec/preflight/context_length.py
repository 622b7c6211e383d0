"""Where vLLM 0.33's V2 model runner will serve a shorter context than asked, because of the draft.

Pure. vLLM 0.33 (`VllmConfig._limit_max_model_len_to_draft`, config/vllm.py) lowers the target's
max_model_len to the draft's, with a log line and no error, when the V2 runner serves a draft that does not
share the target's positions: every `draft_model` draft, and a draft of another method (EAGLE, EAGLE3, DFlash,
DSpark) whose RoPE is not of a type whose only effect is the size of its cache (`_CACHE_ONLY_ROPE_TYPES` in
config/speculative.py: default, linear, llama3, ntk, proportional); such drafts get their
max_position_embeddings raised to the target's instead. The draft's length is the speculative config's
`max_model_len` when given, else the one derived from its config.json, capped at the target's. V1 skips
speculation for the longer sequences instead, and 0.32 has no such rule.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from nim_specdec.engines.vllm.release.methods import method_row
from nim_specdec.engines.vllm.release.runner_choice import rules_version, version_key
from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.memory import parse_length
from nim_specdec.preflight.results import COMPATIBILITY, WARN, Check

NAME = f"{COMPATIBILITY}.max_model_len"
CACHE_ONLY_ROPE_TYPES = ("default", "linear", "llama3", "ntk", "proportional")


def _rope_parameters(draft: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Each RoPE parameter set of a config, one per layer type where nested (transformers' rope_parameters, or
    the older rope_scaling it is normalised from)."""
    tc = mc.text_config(draft)
    rope = tc.get("rope_parameters") or tc.get("rope_scaling")
    if not isinstance(rope, Mapping) or not rope:
        return
    nested = all(isinstance(value, Mapping) for value in rope.values())
    yield from (p for p in rope.values() if p) if nested else (rope,)


def uncached_rope_types(draft: Mapping[str, Any]) -> list[str]:
    """The draft's RoPE types that change more than the size of the rotary cache (empty: it shares positions)."""
    found = [str(p.get("rope_type", p.get("type", "default"))) for p in _rope_parameters(draft)]
    return sorted({kind for kind in found if kind not in CACHE_ONLY_ROPE_TYPES})


def v2_max_model_len_check(
    vllm_version: str,
    runner: str,
    method: str | None,
    spec_config: Mapping[str, Any],
    engine_args: Mapping[str, Any],
    target: Mapping[str, Any] | None,
    draft: Mapping[str, Any] | None,
    draft_where: str,
) -> Check | None:
    """A warning where vLLM will silently serve a shorter max_model_len than the target's; None elsewhere."""
    own = getattr(method_row(method), "draft_config", False)  # the draft has a config.json of its own
    if runner != "v2" or version_key(rules_version(vllm_version)) < (0, 33) or not own:
        return None
    if target is None or draft is None:
        return None
    draft = mc.draft_view(draft)
    why = "a draft_model draft" if method == "draft_model" else None
    if why is None:
        kinds = uncached_rope_types(draft)
        if not kinds:
            return None
        why = f"its RoPE type {', '.join(kinds)} is not one vLLM resizes to the target's positions"
    given = engine_args.get("max_model_len")
    target_len = (parse_length(given) if given is not None else None) or mc.derived_max_model_len(target)
    if not target_len:
        return None
    spec_len = spec_config.get("max_model_len")
    draft_len = int(spec_len) if isinstance(spec_len, int) else mc.derived_max_model_len(draft)
    if not draft_len or draft_len >= target_len:
        return None
    return Check(
        NAME,
        WARN,
        f"vLLM {rules_version(vllm_version)}'s V2 model runner will lower max_model_len from {target_len} to "
        f"{draft_len}, the length of {draft_where} ({why}), without an error",
        f"set NIM_MAX_MODEL_LEN={draft_len} to make it explicit, use a draft with a context of {target_len}, "
        "or serve on the V1 runner (VLLM_USE_V2_MODEL_RUNNER=0), which skips speculation past the draft's length",
        "max_model_len",
        {"max_model_len": target_len, "served_max_model_len": draft_len},
    )
