"""What each vLLM release removed, deprecated or added in the speculative config, said in one line.

The snapshots say which keys and methods a release has; this table says why one is missing (removed, and what
replaced it; or new in a later release) and what a deprecated key still does, so a config is judged against
the release the launcher runs with before any download, not by vLLM after the weights load. Read from each
release's own vllm/config/speculative.py (0.34.0: the removed fields, the field docstrings that say
"Deprecated and has no effect", __post_init__'s parallel_drafting warning) and vllm/platforms/interface.py
(validate_environ: VLLM_USE_V2_MODEL_RUNNER).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nim_specdec.engines.vllm.release.vllm_schema import VllmKnowledge, knowledge_for, known_versions, release_tuple

# key -> (the release that removed it, what replaced it)
REMOVED_KEYS: Mapping[str, tuple[str, str]] = {
    "disable_padded_drafter_batch": (
        "0.34.0",
        "nothing: Model Runner V2, its only runner, always pads the drafter's batch; remove the key",
    ),
    "use_heterogeneous_vocab": (
        "0.34.0",
        "nothing: a draft must share the target's vocabulary there; remove the key, or use a draft of the "
        "target's vocabulary",
    ),
}
# method -> (the release that removed it, what replaced it)
REMOVED_METHODS: Mapping[str, tuple[str, str]] = {
    "custom_class": (
        "0.34.0",
        "a method registered by a vLLM general plugin (register_speculative_method), named in `method`",
    ),
}
# key -> (the release that deprecated it, what it does there)
DEPRECATED_KEYS: Mapping[str, tuple[str, str]] = {
    "suffix_decoding_max_spec_factor": (
        "0.34.0",
        "nothing: the GPU suffix speculator always drafts num_speculative_tokens tokens",
    ),
    "suffix_decoding_min_token_prob": (
        "0.34.0",
        "nothing: the GPU suffix speculator always drafts num_speculative_tokens tokens",
    ),
    "parallel_drafting": (
        "0.34.0",
        "nothing: dflash and dspark always draft in parallel, and no other method supports it",
    ),
}
# The release from which the V1 model runner is gone (VLLM_USE_V2_MODEL_RUNNER other than 1 is refused).
V1_REMOVED_IN = "0.34.0"
# The release from which `method` may name a custom method a vLLM general plugin registers
# (vllm/v1/worker/gpu/spec_decode/speculator_config.py: register_speculative_method).
CUSTOM_METHODS_FROM = "0.34.0"
_METHOD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,99}")
# The release from which suffix decoding is vLLM's own (no arctic-inference).
NATIVE_SUFFIX_FROM = "0.34.0"


def removed_key(key: str, known: VllmKnowledge) -> tuple[str, str] | None:
    """(problem, fix) for a key the release the launcher runs with removed, else None."""
    found = REMOVED_KEYS.get(key)
    if found is None or not known.at_least(found[0]) or key in known.fields:
        return None
    return (
        f"vLLM {known.snapshot} has no speculative_config key {key!r} (removed in vLLM {found[0]})",
        f"replaced by {found[1]}",
    )


def removed_method(method: Any, known: VllmKnowledge) -> tuple[str, str] | None:
    found = REMOVED_METHODS.get(method) if isinstance(method, str) else None
    if found is None or not known.at_least(found[0]) or method in known.methods:
        return None
    return (
        f"vLLM {known.snapshot} has no speculative method {method!r} (removed in vLLM {found[0]})",
        f"replaced by {found[1]}",
    )


def newer_key(key: str, known: VllmKnowledge) -> tuple[str, str] | None:
    """(problem, fix) for a key only a later known release has."""
    if key in known.fields:
        return None
    here = release_tuple(known.snapshot)
    later = [v for v in known_versions() if release_tuple(v) > here and key in knowledge_for(v).fields]
    if not later or any(key in knowledge_for(v).fields for v in known_versions() if release_tuple(v) < here):
        return None
    return (
        f"speculative_config key {key!r} is new in vLLM {later[0]}; vLLM {known.snapshot} does not have it",
        f"remove it, or run vLLM {later[0]}",
    )


def deprecation_warnings(config: Mapping[str, Any], known: VllmKnowledge) -> list[str]:
    """One warning per deprecated key the merged config sets, saying what it does on this release."""
    out = []
    for key in sorted(config):
        found = DEPRECATED_KEYS.get(key)
        if found is not None and known.at_least(found[0]):
            out.append(f"speculative_config.{key} is deprecated in vLLM {found[0]} and does {found[1]}")
    return out


def is_custom_method(method: Any, known: VllmKnowledge) -> bool:
    """A name in `method` that is no built-in method of any known release, on a release that takes custom
    methods: vLLM looks it up among the methods its plugins registered (the launcher's shell checks that an
    installed plugin could have: launch/custom_method.py)."""
    if not known.at_least(CUSTOM_METHODS_FROM) or not isinstance(method, str) or not _METHOD_NAME.fullmatch(method):
        return False
    return not any(method in knowledge_for(v).methods for v in known_versions())
