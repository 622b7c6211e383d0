"""The speculative_config schema of each supported vLLM release, kept here so that validation
costs microseconds instead of the ~4 s that importing vLLM takes.

Which keys, methods, enum values and bounds a release has comes from its snapshot (VllmKnowledge);
the kind of each key is kept here, for every key any supported release has.
tests/engines/vllm/release/test_vllm_schema_drift.py
compares the installed vLLM's SpeculativeConfig with its snapshot, so a version bump that adds, drops or
retypes a field fails the tests instead of silently passing a bad config to vLLM.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Annotated, Any, Callable, Literal, Mapping

from nim_specdec.engines.vllm.release.release_changes import is_custom_method, newer_key, removed_key, removed_method
from nim_specdec.engines.vllm.release.vllm_schema import DEFAULT, VllmKnowledge, knowledge_for, known_versions
from nim_specdec.engines.vllm.schedule.spec_schedule import KEY as SCHEDULE_KEY
from nim_specdec.engines.vllm.schedule.spec_schedule import validate_batch_size_schedule
from nim_specdec.engines.vllm.spec.method_infer import effective_method
from nim_specdec.engines.vllm.spec.spec_rules import check_rules
from nim_specdec.errors import ConfigError

# The default release's names, for callers that need no particular release.
VLLM_VERSION = DEFAULT.snapshot
METHODS = DEFAULT.methods
MTP_METHODS = DEFAULT.mtp_methods
# Methods whose drafter is a separate checkpoint named by `model`.

# field -> kind, for every field of every supported release (which fields a release has: its snapshot);
# kinds: int, pos_int (>= 1), bool, str, float, list, object, enum (values from the snapshot).
KINDS: Mapping[str, str] = {
    "enforce_eager": "bool",
    "num_speculative_tokens": "pos_int",
    "model": "str",
    "method": "enum",
    "draft_tensor_parallel_size": "pos_int",
    "tensor_parallel_size": "pos_int",
    "quantization": "str",
    "moe_backend": "enum",
    "attention_backend": "str",
    "kv_cache_dtype": "enum",
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
    "rejection_sample_method": "enum",
    "synthetic_acceptance_rates": "list",
    "synthetic_acceptance_length": "float",
    "enable_adaptive_verification": "bool",
    "draft_sample_method": "enum",
    "dspark_draft_topk": "pos_int",
    # 0.33
    "disable_lookahead_block_hashes": "bool",
    "draft_lm_head_quantization": "enum",
    "xpress_topc": "int",
    "fly_window_size": "int",
    "fly_entropy_threshold": "float",
    "fly_entropy_top_k": "int",
    # 0.34
    "draft_decode_context_parallel_size": "pos_int",
    "speculator_options": "object",
    "suffix_decoding_corpus_tokens": "int",
}
# The default release's fields, for callers that need no particular release.
FIELDS: Mapping[str, str] = {key: KINDS[key] for key in sorted(DEFAULT.fields)}
# Inclusive bounds (None: unbounded on that side) that vLLM checks on the suffix keys when, and only when, the
# method is suffix: 0.32's SpeculativeConfig.__post_init__ calls _validate_suffix_decoding() under
# `elif self.method == "suffix"` (vllm/config/speculative.py), 0.34's SuffixSpeculatorConfig.configure
# (vllm/v1/worker/gpu/spec_decode/suffix/config.py) runs for base_method "suffix". Another method ignores them,
# so `suffix_decoding_max_tree_depth: 0` beside "ngram" is a valid config.
SUFFIX_RANGES: Mapping[str, tuple[float | None, float | None]] = {
    "suffix_decoding_max_tree_depth": (1, None),
    "suffix_decoding_max_cached_requests": (0, None),
    "suffix_decoding_max_spec_factor": (0, None),
    "suffix_decoding_min_token_prob": (0, 1),
    "suffix_decoding_corpus_tokens": (0, 2**31 - 1),  # 0.34
}


# Fields vLLM fills in itself from the engine configuration; a user never sets them.
INTERNAL_FIELDS = frozenset(
    {"target_model_config", "target_parallel_config", "draft_model_config", "draft_parallel_config"}
)


_LISTS = {
    "synthetic_acceptance_rates": list[float],
    "num_speculative_tokens_per_batch_size": list[tuple[int, int, int]],
}
_OPEN_ENUMS = ("kv_cache_dtype",)  # 0.33 also accepts a custom dtype a platform backend registers


@lru_cache(maxsize=None)
def _adapter(key: str, known: VllmKnowledge):
    """A pydantic validator with vLLM's own lax coercion ("3", 3.0 and true are integers; "yes" a boolean)."""
    from pydantic import Field, TypeAdapter  # noqa: PLC0415 - +134 modules (~80 ms); the fast checks mostly decide

    kind = KINDS[key]
    if key in _LISTS:
        tp: Any = _LISTS[key]
    elif key in _OPEN_ENUMS and known.at_least("0.33.0"):
        tp = str
    elif kind == "enum":
        tp = Literal[tuple(known.enum(key))]
    elif kind == "pos_int":
        tp = Annotated[int, Field(ge=1)]
    else:
        tp = {"int": int, "bool": bool, "str": str, "float": float, "object": dict}[kind]
    return TypeAdapter(tp)


def _describe(key: str, known: VllmKnowledge = DEFAULT) -> str:
    if KINDS[key] == "enum" or key in ("attention_backend", "quantization"):
        values = known.enum(key)
        shown = ", ".join(values) if len(values) <= 8 else ", ".join(values[:8]) + ", ..."
        return f"one of: {shown}"
    if key in _LISTS:
        return {
            "synthetic_acceptance_rates": "a list of numbers",
            "num_speculative_tokens_per_batch_size": "a list of [first, last, k] integer triples",
        }[key]
    return {
        "pos_int": "an integer >= 1",
        "int": "an integer",
        "float": "a number",
        "bool": "true or false",
        "str": "a string",
        "object": "a JSON object",
    }[KINDS[key]]


_UNDECIDED = object()
_I64 = 2**63


def _exact(key: str, value: Any, known: VllmKnowledge) -> Any:
    """A value already of the field's own type, accepted as pydantic would accept it, else _UNDECIDED.

    The common configs hold only such values (`"method": "ngram"`, `"num_speculative_tokens": 3`), so `plan`
    decides them without importing pydantic (most of its start-up); anything to coerce, refuse or explain goes
    to pydantic, the one judge of lax coercion. tests/engines/vllm/spec/test_spec_schema_fast_path.py holds the two
    equal.
    """
    kind = KINDS[key]
    if kind in ("int", "pos_int") and type(value) is int and -_I64 <= value < _I64:
        return value if kind == "int" or value >= 1 else _UNDECIDED
    if kind == "bool" and type(value) is bool:
        return value
    if kind == "str" and type(value) is str:
        return value
    if kind == "float" and type(value) is float and value == value and abs(value) != float("inf"):
        return value
    if kind == "enum" and type(value) is str and not (key in _OPEN_ENUMS and known.at_least("0.33.0")):
        return value if value in known.enum(key) else _UNDECIDED
    return _UNDECIDED


def coerce(key: str, value: Any, known: VllmKnowledge = DEFAULT) -> Any:
    """The value as vLLM's pydantic validation reads it; ValueError when vLLM refuses it."""
    if value is None:
        if key in known.data["nullable"]:
            return None
        raise ValueError("null is not accepted for this key")
    if key == "attention_backend":
        if not isinstance(value, str) or (value.lower() != "auto" and value.upper() not in known.enum(key)):
            raise ValueError("unknown attention backend")
        return None if value.lower() == "auto" else value.upper()
    exact = _exact(key, value, known)
    if exact is not _UNDECIDED:
        return exact
    from pydantic import ValidationError  # noqa: PLC0415 - +134 modules (~80 ms), loaded with the adapter only

    try:
        return _adapter(key, known).validate_python(value)
    except ValidationError as err:
        raise ValueError(err.errors(include_url=False, include_input=False)[0]["msg"]) from None


def normalise_keys(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """vLLM turns kebab-case keys of the speculative config into snake_case. One key in two spellings
    (`num-speculative-tokens` and `num_speculative_tokens`) is refused: vLLM would keep one of them silently.
    Every explicit layer (NIM_SPECDEC_ARGS, NIM_PASSTHROUGH_ARGS, the command line) passes here."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = key.replace("-", "_") if isinstance(key, str) else key
        if name in out:
            raise ConfigError(
                where, f"speculative_config key {name!r} is given twice (snake and kebab case)", "keep one spelling"
            )
        out[name] = value
    return out


def _ranges(known: VllmKnowledge) -> dict[str, tuple[float | None, float | None]]:
    """The bounds of vLLM's pydantic Field(ge=, le=), which hold whatever the method (from the snapshot). The
    suffix keys' bounds hold for method suffix only: spec_rules.SUFFIX_RANGES, judged on the merged config."""
    return {key: tuple(bounds) for key, bounds in known.data["bounds"].items()}


def validate_fields(config: Mapping[str, Any], where: str, known: VllmKnowledge = DEFAULT) -> None:
    """Key names, types and ranges of one layer, which may be partial."""
    fields = known.fields
    ranges = _ranges(known)
    for key, value in config.items():
        if key not in fields:
            changed = removed_key(key, known) or newer_key(key, known) or _set_by_vllm(key, known)
            if changed:
                raise ConfigError(where, *changed)
            close = difflib.get_close_matches(key, sorted(fields), n=1, cutoff=0.6)
            fix = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(fields))}"
            if key in INTERNAL_FIELDS:
                fix = "vLLM sets it itself; remove it"
            elif key in KINDS:
                fix = f"{key} is not in vLLM {known.snapshot} (the launcher knows {_releases_with(key)}); remove it"
            raise ConfigError(where, f"unknown speculative_config key {key!r} for vLLM {known.snapshot}", fix)
        if key == "tensor_parallel_size":
            raise ConfigError(
                where,
                "speculative_config.tensor_parallel_size is not accepted by vLLM",
                "use draft_tensor_parallel_size (1 or the target's tensor parallel size)",
            )
        gone = removed_method(value, known) if key == "method" else None
        if gone:
            raise ConfigError(where, *gone)
        if key == "method" and is_custom_method(value, known):
            continue  # a plugin's method: its registration is checked by the shell, its rules by vLLM
        try:
            coerced = coerce(key, value, known)
        except ValueError as err:
            described = _describe(key, known)
            problem = f"speculative_config.{key} = {value!r} is not {described} for vLLM {known.snapshot} ({err})"
            fix = f"set {key} to {described}"
            elsewhere = _releases_with_value(key, value)
            if elsewhere:  # a value of another release: say so rather than list pydantic's choices
                verb = "have" if "," in elsewhere else "has"
                problem = (
                    f"speculative_config.{key} = {value!r} is not in vLLM {known.snapshot} (vLLM {elsewhere} {verb} it)"
                )
                fix = f"set {key} to {described}, or run vLLM {elsewhere}"
            raise ConfigError(where, problem, fix) from None
        if key in ranges and coerced is not None:
            _check_range(key, coerced, ranges[key], where)


def _set_by_vllm(key: str, known: VllmKnowledge) -> tuple[str, str] | None:
    """0.34's custom_method: a field vLLM fills from `method` (init=False), refused as input."""
    if key != "custom_method" or not known.at_least("0.34.0"):
        return None
    return (
        f"speculative_config.custom_method is set by vLLM {known.snapshot} itself from method",
        "name the registered custom method in method instead",
    )


def _releases_with(key: str) -> str:
    return ", ".join(v for v in known_versions() if key in knowledge_for(v).fields)


def _releases_with_value(key: str, value: Any) -> str:
    """The known releases that accept an enum value this one refuses (medusa: 0.32.0)."""
    if KINDS[key] != "enum" or not isinstance(value, str):
        return ""
    return ", ".join(
        v for v in known_versions() if key in knowledge_for(v).data["enums"] and value in knowledge_for(v).enum(key)
    )


def _check_range(key: str, value: float, bounds: tuple[float | None, float | None], where: str) -> None:
    lo, hi = bounds
    if (lo is None or value >= lo) and (hi is None or value <= hi):
        return
    wanted = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
    raise ConfigError(where, f"speculative_config.{key} = {value} must be {wanted}", f"set {key} to a value {wanted}")


def validate_complete(
    config: Mapping[str, Any],
    where: str,
    target_tp: int = 1,
    draft_config: Mapping[str, Any] | None = None,
    known: VllmKnowledge = DEFAULT,
    key_where: Callable[[str], str] | None = None,
) -> None:
    """Relations between keys of the merged config, the one vLLM will receive (vLLM's cross-field rules).
    `key_where(key)`: the source that gave a key, to name it where one key alone is wrong."""
    if is_custom_method(config.get("method"), known):
        return  # a custom speculator's config decides what it accepts: left to the vLLM check
    values = {key: coerce(key, value, known) for key, value in config.items() if key in known.fields}
    if effective_method(values, draft_config, known) == "suffix":
        for key, bounds in SUFFIX_RANGES.items():
            if values.get(key) is not None:
                _check_range(key, values[key], bounds, key_where(key) if key_where else where)
    problem = check_rules(values, target_tp, draft_config, known)
    if problem:
        raise ConfigError(where, problem[0], problem[1])
    schedule = config.get(SCHEDULE_KEY)
    if schedule is not None:
        largest = values.get("num_speculative_tokens")
        if largest is None and values.get("method") == "suffix":
            # vLLM's default for suffix: the tree depth (24); 0.34's GPU suffix speculator, min(8, depth)
            depth = values.get("suffix_decoding_max_tree_depth") or 24
            largest = min(8, depth) if known.at_least("0.34.0") else depth
        validate_batch_size_schedule(schedule, largest, where)
