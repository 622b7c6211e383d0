"""Compatibility of the speculative method and draft with the target, one function per method.

Pure: the configs and the draft's tensor headers come in as data, checks come out. The
method picks the checks through a table, so a new method is one entry, not a new branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from nim_specdec.engines.vllm.release.methods import method_row
from nim_specdec.engines.vllm.release.vllm_schema import DEFAULT, VllmKnowledge
from nim_specdec.plan.method.method_choice import MTP_KEYS, mtp_drafter, mtp_heads
from nim_specdec.preflight import model_config as mc
from nim_specdec.preflight.checkpoint import Checkpoint
from nim_specdec.preflight.compat_eagle import eagle_checks
from nim_specdec.preflight.results import FAIL, WARN, Check, passed, skipped

# MTP targets whose head count vLLM 0.32 leaves unset when their config.json has no key
# (hf_config_override reads num_nextn_predict_layers with no default): num_speculative_tokens
# then has no default either.
N_PREDICT_UNSET = ("qwen3_next",)


@dataclass(frozen=True)
class CompatInputs:
    method: str
    spec_config: Mapping[str, Any]
    target: mc.Config | None  # the target's config.json, None when not available locally
    draft: mc.Config | None  # the draft's config.json, None when there is no draft or it is not local
    draft_weights: Checkpoint | None
    where: str  # how error messages name the draft, e.g. "draft hf://org/name"
    known: VllmKnowledge = DEFAULT  # the vLLM release the plan is for: whether it has an MTP drafter for the target
    runner: str = "v1"  # the plan's model runner: where vLLM reads an EAGLE3 draft's auxiliary layer ids


def _eagle(inputs: CompatInputs) -> list[Check]:
    if inputs.draft is None:
        return [skipped("compatibility.draft", "the draft's config.json is not available locally")]
    return eagle_checks(inputs.method, inputs.draft, inputs.draft_weights, inputs.target, inputs.where, inputs.runner)


def _draft_model(inputs: CompatInputs) -> list[Check]:
    name = "compatibility.vocabulary"
    if inputs.draft is None or inputs.target is None:
        return [skipped(name, "the draft's or the target's config.json is not available locally")]
    draft_vocab, target_vocab = mc.vocab_size(inputs.draft), mc.vocab_size(inputs.target)
    figures = {"target_vocab_size": target_vocab, "draft_vocab_size": draft_vocab}
    if draft_vocab is None or target_vocab is None:
        return [skipped(name, "a config.json gives no vocab_size", **figures)]
    if int(draft_vocab) == int(target_vocab):
        return [passed(name, **figures)]
    return [
        Check(
            name,
            FAIL,
            f"the draft's vocabulary has {draft_vocab} tokens but the target's has {target_vocab}",
            "use a draft model that shares the target's tokenizer (NIM_DRAFT_MODEL_PATH), or method ngram",
            inputs.where,
            figures,
        )
    ]


def mtp_declaration(target: mc.Config) -> tuple[str, int | None] | None:
    """What declares the target's MTP heads (the method choice's rule) and the count vLLM will use."""
    heads = mtp_heads(target)
    if heads is None:
        return None
    key, count = heads
    if key.startswith("model_type") and target.get("model_type") in N_PREDICT_UNSET:
        return key, None
    return key, count


def _mtp(inputs: CompatInputs) -> list[Check]:
    if inputs.target is None:
        return [skipped("compatibility.mtp_heads", "the target's config.json is not available locally")]
    heads = mtp_declaration(inputs.target)
    if heads is None:
        return [
            Check(
                "compatibility.mtp_heads",
                FAIL,
                f"method 'mtp' needs MTP heads but the target's config.json declares none (looked for {', '.join(MTP_KEYS)})",  # noqa: E501
                "use method eagle3 with a draft (NIM_DRAFT_MODEL_PATH) or method ngram",
                "speculative_config",
                {"keys_looked_for": list(MTP_KEYS)},
            )
        ]
    key, n_predict = heads
    if mtp_drafter(inputs.target, inputs.known) is None:
        # vLLM rewrites the target into its MTP drafter by model_type or architecture; without one it stops at
        # start ("Unsupported speculative method: 'mtp'"), whatever the config.json declares.
        kind = inputs.target.get("model_type")
        shown = str(kind)[:60] if isinstance(kind, str) else "(none)"
        return [
            Check(
                "compatibility.mtp_heads",
                FAIL,
                f"model type {shown} has an MTP layer ({key}) but {inputs.known.release()} has no MTP drafter for it",
                "use method eagle3 with a draft (NIM_DRAFT_MODEL_PATH) or method ngram",
                "speculative_config",
                {"key": key, "model_type": shown},
            )
        ]
    return [passed("compatibility.mtp_heads", key=key, n_predict=n_predict), _mtp_tokens(inputs.spec_config, n_predict)]


def _mtp_tokens(spec_config: Mapping[str, Any], n_predict: int | None) -> Check:
    """vLLM's rule: k defaults to n_predict; above it, k must be a multiple so the heads can be reused."""
    name = "compatibility.num_speculative_tokens"
    raw = spec_config.get("num_speculative_tokens")
    if raw is None and n_predict is None:
        return Check(
            name,
            FAIL,
            "num_speculative_tokens is not set and this target does not state its number of MTP heads",
            'set "num_speculative_tokens": 1 in the speculative config',
            "speculative_config",
        )
    if raw is None:
        return passed(
            name, "defaults to the number of MTP heads", num_speculative_tokens=n_predict, n_predict=n_predict
        )
    k = int(raw)
    figures = {"num_speculative_tokens": k, "n_predict": n_predict}
    if n_predict is None or k <= n_predict:
        return passed(name, **figures)
    if k % n_predict != 0:
        return Check(
            name,
            FAIL,
            f"num_speculative_tokens:{k} must be divisible by n_predict={n_predict}",
            f"set num_speculative_tokens to {n_predict} or a multiple of it",
            "speculative_config",
            figures,
        )
    return Check(
        name,
        WARN,
        f"num_speculative_tokens {k} runs each of the {n_predict} MTP heads {k // n_predict} times, which usually lowers acceptance",  # noqa: E501
        "",
        "speculative_config",
        figures,
    )


def _model_free(inputs: CompatInputs) -> list[Check]:
    # Suffix decoding's one requirement, the arctic-inference package, is a fact of the serving Python: serve checks it.
    return [passed(f"compatibility.{inputs.method}", "model-free: nothing to check beyond the config")]


# A method's row names the family of checks it gets (engines/vllm/release/methods.py: `preflight`).
CHECKS_BY_FAMILY: dict[str, Callable[[CompatInputs], list[Check]]] = {
    "eagle": _eagle,
    "draft_model": _draft_model,
    "mtp": _mtp,
    "model_free": _model_free,
}


def compatibility_checks(inputs: CompatInputs) -> list[Check]:
    family = getattr(method_row(inputs.method), "preflight", None)
    run = CHECKS_BY_FAMILY.get(family) if family else None
    if run is None:
        return [skipped("compatibility.method", f"no pre-flight checks for method {inputs.method!r}")]
    return run(inputs)
