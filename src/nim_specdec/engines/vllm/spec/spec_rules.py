"""vLLM's cross-field rules for the speculative config, mirrored from vllm/config/speculative.py and
vllm/v1/spec_decode/dynamic/utils.py so that `plan` refuses what vLLM would refuse at start.

The batch-size schedule has its own module (engines/vllm/schedule/spec_schedule.py). Rules that need the draft's weights or the platform (vocabulary sizes, max_model_len against the draft,
supported architectures, Arctic Inference) are left to the vLLM check that `serve` runs (docs/configuration.md).
Rules a release added are applied from that release on (VllmKnowledge.at_least).
Pure: (coerced values, target tensor parallel size, draft config.json, release) -> (problem, fix) or None.
"""  # noqa: E501

from __future__ import annotations

from typing import Any, Mapping

from nim_specdec.engines.vllm.release.methods import method_row, names_where, rows
from nim_specdec.engines.vllm.release.vllm_schema import DEFAULT, VllmKnowledge
from nim_specdec.engines.vllm.spec.method_infer import effective_method

Problem = tuple[str, str] | None


def _without_model(method: str | None) -> bool:
    """vLLM builds this method's proposer with no draft checkpoint (it fills `model` itself or needs none)."""
    row = method_row(method)
    return row is not None and row.runs_without_model


def _k(
    values: Mapping[str, Any], method: str | None, draft: Mapping[str, Any] | None, known: VllmKnowledge = DEFAULT
) -> int | None:
    k = values.get("num_speculative_tokens")
    if k is None and method == "suffix":
        depth = values.get("suffix_decoding_max_tree_depth") or 24
        # 0.34's SuffixSpeculatorConfig.configure: min(8, depth); before, the tree depth
        return min(8, depth) if known.at_least("0.34.0") else depth
    if k is None and values.get("model") is not None and draft:
        return draft.get("n_predict") or draft.get("num_nextn_predict_layers")
    return k


def _tokens(values: Mapping[str, Any], method: str | None, draft: Mapping[str, Any] | None) -> Problem:
    k = values.get("num_speculative_tokens")
    model = values.get("model")
    if model is None and k is not None and not _without_model(method):
        if method == "custom_class":
            return (
                "method 'custom_class' needs 'model' (the proposer's import path)",
                'add "model": "my_module.MyProposer"',
            )
        return (
            f"method {method!r} needs a draft but speculative_config has no 'model'",
            'add "model": "<bare name>" and set NIM_DRAFT_MODEL_PATH to the draft\'s location',
        )
    if k is None and method != "suffix":
        if model is not None and not _without_model(method) and draft is None:
            return None  # the draft's config.json may give n_predict: left to the vLLM check
        if _k(values, method, draft) is None:
            return f"method {method!r} needs num_speculative_tokens", 'add "num_speculative_tokens": 3'
    return None


def _ngram(values: Mapping[str, Any], method: str | None) -> Problem:
    if not getattr(method_row(method), "prompt_lookup", False):
        return None  # vLLM ignores (zeroes) the prompt-lookup keys for other methods
    lo, hi = values.get("prompt_lookup_min"), values.get("prompt_lookup_max")
    lo, hi = (lo if lo is not None else hi), (hi if hi is not None else lo)
    if lo is not None and hi is not None and lo > hi:
        return (
            f"prompt_lookup_min ({lo}) is greater than prompt_lookup_max ({hi})",
            "make prompt_lookup_min <= prompt_lookup_max",
        )
    return None


def _synthetic(values: Mapping[str, Any], k: int | None) -> Problem:
    rates, length = values.get("synthetic_acceptance_rates"), values.get("synthetic_acceptance_length")
    if values.get("rejection_sample_method") != "synthetic":
        if rates is not None or length is not None:
            return (
                "synthetic_acceptance_rates / synthetic_acceptance_length only apply with rejection_sample_method 'synthetic'",  # noqa: E501
                'add "rejection_sample_method": "synthetic" or remove them',
            )
        return None
    if (rates is None) == (length is None):
        return (
            "rejection_sample_method 'synthetic' needs exactly one of synthetic_acceptance_rates or synthetic_acceptance_length",  # noqa: E501
            "give one of the two",
        )
    if k is None:
        return None
    if rates is not None:
        if len(rates) != k:
            return (
                f"synthetic_acceptance_rates has {len(rates)} entries, not num_speculative_tokens ({k})",
                f"give {k} rates",
            )
        if not all(0.0 <= r <= 1.0 for r in rates):
            return "synthetic_acceptance_rates entries must be in [0, 1]", "use probabilities"
        if any(rates[i] > rates[i - 1] for i in range(1, len(rates))):
            return "synthetic_acceptance_rates must not increase", "sort them from highest to lowest"
    elif not 1.0 <= length <= k + 1:
        return f"synthetic_acceptance_length ({length}) must be in [1, {k + 1}]", f"use a value from 1 to {k + 1}"
    return None


def _exclusive(values: Mapping[str, Any], method: str | None, target_tp: int, known: VllmKnowledge) -> Problem:
    if values.get("use_heterogeneous_vocab") and values.get("use_local_argmax_reduction") and known.at_least("0.33.0"):
        return (
            "use_heterogeneous_vocab and use_local_argmax_reduction exclude each other (vLLM 0.33)",
            "disable one of them",
        )
    if values.get("use_heterogeneous_vocab"):
        if method != "draft_model":
            return "use_heterogeneous_vocab only works with method 'draft_model'", "remove use_heterogeneous_vocab"
        if values.get("draft_sample_method", "greedy") != "greedy":
            return "use_heterogeneous_vocab needs draft_sample_method 'greedy'", 'set "draft_sample_method": "greedy"'
    if values.get("index_share_for_mtp_iteration") is not None and method != "mtp":
        return "index_share_for_mtp_iteration only applies to method 'mtp'", "remove it"
    if method != "dspark" and values.get("enable_adaptive_verification") and values.get("use_local_argmax_reduction"):
        return "enable_adaptive_verification and use_local_argmax_reduction exclude each other", "disable one of them"
    proposer_class = getattr(method_row(method), "model", None) == "class"
    uses_draft = values.get("model") is not None and not _without_model(method) and not proposer_class
    if uses_draft:
        tp = values.get("draft_tensor_parallel_size")
        if tp is not None and tp not in (1, target_tp):
            return (
                f"draft_tensor_parallel_size {tp} must be 1 or the target's tensor parallel size ({target_tp})",
                "use 1",
            )
        quantization = values.get("quantization")
        if quantization is not None and quantization not in known.enum("quantization"):
            return (
                f"quantization {quantization!r} is not a vLLM quantization method",
                "use one of vLLM's methods, e.g. fp8",
            )
        if values.get("dspark_draft_topk") is not None and method != "dspark":
            return "dspark_draft_topk only applies to method 'dspark'", "remove it"
    return None


def _fly(values: Mapping[str, Any], method: str | None, k: int | None) -> Problem:
    """vLLM 0.33's FLy verification (rejection_sample_method "fly"); the key exists in 0.33 only."""
    if values.get("rejection_sample_method") != "fly":
        return None
    if method == "extract_hidden_states":
        return "rejection_sample_method 'fly' does not work with method 'extract_hidden_states'", "use 'standard'"
    if k is not None and k < 2:
        return (
            f"rejection_sample_method 'fly' needs num_speculative_tokens >= 2, not {k}",
            "set num_speculative_tokens to 2 or more",
        )
    window = values.get("fly_window_size")
    if k is not None and window is not None and window >= k:
        return (
            f"fly_window_size ({window}) must be smaller than num_speculative_tokens ({k})",
            f"set fly_window_size to at most {k - 1}, or leave it out (vLLM picks min(6, k - 1))",
        )
    return None


def _draft_head(values: Mapping[str, Any], method: str | None, known: VllmKnowledge) -> Problem:
    """vLLM 0.33's draft_lm_head_quantization: only drafters that share the target's lm_head (0.34 adds
    DSpark: its DSparkSpeculatorConfig.supported_options). 0.34's speculator_options: only a custom
    speculator's config lists it, no built-in method's."""
    heads = tuple(row.name for row in rows() if row.lm_head_from and known.at_least(row.lm_head_from))
    if values.get("draft_lm_head_quantization") is not None and method not in heads:
        return (
            f"draft_lm_head_quantization is not supported for method {method!r}",
            f"use it with {', '.join(heads)}, or remove it",
        )
    if values.get("speculator_options") is not None and method in known.methods:
        return (
            f"speculator_options is not supported with the built-in method {method!r} in vLLM {known.snapshot}",
            "remove it (only a custom method registered by a plugin takes speculator_options)",
        )
    return None


def _parallel_drafting(values: Mapping[str, Any], method: str | None, known: VllmKnowledge) -> Problem:
    """0.34: parallel_drafting (deprecated, no effect) true with a method other than dflash or dspark is refused."""
    parallel = " and ".join(names_where("parallel"))
    row = method_row(method)
    if known.at_least("0.34.0") and values.get("parallel_drafting") is True and not (row and row.parallel):
        return (
            f"parallel_drafting is only supported by the {parallel} methods, not {method!r}, in vLLM {known.snapshot}",
            f"remove parallel_drafting (deprecated there: {parallel} always draft in parallel)",
        )
    return None


def check_rules(
    values: Mapping[str, Any],
    target_tp: int = 1,
    draft: Mapping[str, Any] | None = None,
    known: VllmKnowledge = DEFAULT,
) -> Problem:
    method = effective_method(values, draft, known)
    k = _k(values, method, draft, known)
    return (
        _tokens(values, method, draft)
        or _ngram(values, method)
        or _synthetic(values, k)
        or _exclusive(values, method, target_tp, known)
        or _fly(values, method, k)
        or _draft_head(values, method, known)
        or _parallel_drafting(values, method, known)
    )
