"""The speculative_config schema of the pinned vLLM release, kept here so that validation
costs microseconds instead of the ~4 s that importing vLLM takes.

tests/test_spec_schema_drift.py compares this table with the installed vLLM's
SpeculativeConfig wherever vLLM is installed, so a version bump that adds, drops or
retypes a field fails the tests instead of silently passing a bad config to vLLM.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Annotated, Any, Literal, Mapping

from nim_specdec.config.method_infer import MTP_METHODS
from nim_specdec.config.spec_schedule import KEY as SCHEDULE_KEY, validate_batch_size_schedule
from nim_specdec.config.vllm_schema import schema
from nim_specdec.errors import ConfigError

VLLM_VERSION = "0.32.0"

METHODS = (
    "ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "custom_class", "eagle", "eagle3",
    "extract_hidden_states", *MTP_METHODS, "dflash", "ngram_gpu", "dspark",
)
# Methods whose drafter is a separate checkpoint named by `model`.
NEEDS_MODEL = frozenset({"eagle", "eagle3", "draft_model", "medusa", "mlp_speculator", "dflash", "dspark"})
NGRAM_METHODS = frozenset({"ngram", "ngram_gpu"})

# field -> kind; kinds: int, pos_int (>= 1), bool, str, float, list, object, or a tuple of allowed strings.
FIELDS: Mapping[str, Any] = {
    "enforce_eager": "bool",
    "num_speculative_tokens": "pos_int",
    "model": "str",
    "method": METHODS,
    "draft_tensor_parallel_size": "pos_int",
    "tensor_parallel_size": "pos_int",
    "quantization": "str",
    "moe_backend": "str",
    "attention_backend": "str",
    "kv_cache_dtype": "str",
    "max_model_len": "pos_int",
    "revision": "str",
    "code_revision": "str",
    "index_share_for_mtp_iteration": "bool",
    "disable_padded_drafter_batch": "bool",
    "disable_eagle_block_drop": "bool",
    "use_local_argmax_reduction": "bool",
    "use_heterogeneous_vocab": "bool",
    "prompt_lookup_max": "pos_int",
    "prompt_lookup_min": "pos_int",
    "parallel_drafting": "bool",
    "num_speculative_tokens_per_batch_size": "list",
    "suffix_decoding_max_tree_depth": "int",
    "suffix_decoding_max_cached_requests": "int",
    "suffix_decoding_max_spec_factor": "float",
    "suffix_decoding_min_token_prob": "float",
    "draft_load_config": "object",
    "rejection_sample_method": ("standard", "synthetic", "block"),
    "synthetic_acceptance_rates": "list",
    "synthetic_acceptance_length": "float",
    "enable_adaptive_verification": "bool",
    "draft_sample_method": ("greedy", "probabilistic"),
    "dspark_draft_topk": "pos_int",
}
# Inclusive bounds vLLM's SpeculativeConfig enforces (None: unbounded on that side).
RANGES: Mapping[str, tuple[float | None, float | None]] = {
    "suffix_decoding_max_tree_depth": (1, None),
    "suffix_decoding_max_cached_requests": (0, None),
    "suffix_decoding_max_spec_factor": (0, None),
    "suffix_decoding_min_token_prob": (0, 1),
}
# Fields vLLM fills in itself from the engine configuration; a user never sets them.
INTERNAL_FIELDS = frozenset(
    {"target_model_config", "target_parallel_config", "draft_model_config", "draft_parallel_config"}
)


_LISTS = {"synthetic_acceptance_rates": list[float], "num_speculative_tokens_per_batch_size": list[tuple[int, int, int]]}
_ENUMS = ("method", "kv_cache_dtype", "moe_backend", "rejection_sample_method", "draft_sample_method")


@lru_cache(maxsize=None)
def _adapter(key: str):
    """A pydantic validator with vLLM's own lax coercion ("3", 3.0 and true are integers; "yes" a boolean)."""
    from pydantic import Field, TypeAdapter

    kind = FIELDS[key]
    if key in _LISTS:
        tp: Any = _LISTS[key]
    elif key in _ENUMS:
        tp = Literal[tuple(schema()["enums"][key])]
    elif kind == "pos_int":
        tp = Annotated[int, Field(ge=1)]
    else:
        tp = {"int": int, "bool": bool, "str": str, "float": float, "object": dict}[kind if isinstance(kind, str) else "str"]
    return TypeAdapter(tp)


def _describe(key: str) -> str:
    if key in _ENUMS or key in ("attention_backend", "quantization"):
        values = schema()["enums"][key]
        shown = ", ".join(values) if len(values) <= 8 else ", ".join(values[:8]) + ", ..."
        return f"one of: {shown}"
    if key in _LISTS:
        return {"synthetic_acceptance_rates": "a list of numbers",
                "num_speculative_tokens_per_batch_size": "a list of [first, last, k] integer triples"}[key]
    return {"pos_int": "an integer >= 1", "int": "an integer", "float": "a number", "bool": "true or false",
            "str": "a string", "object": "a JSON object"}[FIELDS[key]]


def coerce(key: str, value: Any) -> Any:
    """The value as vLLM's pydantic validation reads it; ValueError when vLLM refuses it."""
    if value is None:
        if key in schema()["nullable"]:
            return None
        raise ValueError("null is not accepted for this key")
    if key == "attention_backend":
        if not isinstance(value, str) or (value.lower() != "auto" and value.upper() not in schema()["enums"][key]):
            raise ValueError("unknown attention backend")
        return None if value.lower() == "auto" else value.upper()
    from pydantic import ValidationError

    try:
        return _adapter(key).validate_python(value)
    except ValidationError as err:
        raise ValueError(err.errors(include_url=False, include_input=False)[0]["msg"]) from None


def normalise_keys(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """vLLM turns kebab-case keys of the speculative config into snake_case."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        out[key.replace("-", "_") if isinstance(key, str) else key] = value
    return out


def validate_spec_config(config: Mapping[str, Any], where: str) -> None:
    """Raise ConfigError for the first problem found; `where` names the source (variable or argument)."""
    config = normalise_keys(config, where)
    validate_fields(config, where)
    validate_complete(config, where)


def validate_fields(config: Mapping[str, Any], where: str) -> None:
    """Key names, types and ranges of one layer, which may be partial."""
    for key, value in config.items():
        if key not in FIELDS:
            close = difflib.get_close_matches(key, list(FIELDS), n=1, cutoff=0.6)
            fix = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(FIELDS))}"
            if key in INTERNAL_FIELDS:
                fix = "vLLM sets it itself; remove it"
            raise ConfigError(where, f"unknown speculative_config key {key!r} for vLLM {VLLM_VERSION}", fix)
        if key == "tensor_parallel_size":
            raise ConfigError(where, "speculative_config.tensor_parallel_size is not accepted by vLLM",
                              "use draft_tensor_parallel_size (1 or the target's tensor parallel size)")
        try:
            coerced = coerce(key, value)
        except ValueError as err:
            problem = f"speculative_config.{key} = {value!r} is not {_describe(key)} ({err})"
            raise ConfigError(where, problem, f"set {key} to {_describe(key)}") from None
        if key in RANGES and coerced is not None:
            _check_range(key, coerced, RANGES[key], where)


def _check_range(key: str, value: float, bounds: tuple[float | None, float | None], where: str) -> None:
    lo, hi = bounds
    if (lo is None or value >= lo) and (hi is None or value <= hi):
        return
    wanted = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
    raise ConfigError(where, f"speculative_config.{key} = {value} must be {wanted}", f"set {key} to a value {wanted}")


def validate_complete(config: Mapping[str, Any], where: str, target_tp: int = 1,
                      draft_config: Mapping[str, Any] | None = None) -> None:
    """Relations between keys of the merged config, the one vLLM will receive (vLLM's cross-field rules)."""
    from nim_specdec.config.spec_rules import check_rules

    values = {key: coerce(key, value) for key, value in config.items() if key in FIELDS}
    problem = check_rules(values, target_tp, draft_config)
    if problem:
        raise ConfigError(where, problem[0], problem[1])
    schedule = config.get(SCHEDULE_KEY)
    if schedule is not None:
        largest = values.get("num_speculative_tokens")
        if largest is None and values.get("method") == "suffix":
            largest = values.get("suffix_decoding_max_tree_depth") or 24  # vLLM's default for suffix
        validate_batch_size_schedule(schedule, largest, where)
