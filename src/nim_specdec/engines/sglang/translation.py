"""The guide's vLLM-form speculative config ({"method": "eagle3", "model": "/abs/draft", "num_speculative_tokens": 3})
written as SGLang 0.5's flags, merged with the user's own SGLang speculative arguments, which win. What SGLang
cannot express is refused in one line naming the key, the value and the fix; what it expresses otherwise (n-gram's
match window) is dropped with a note. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

from nim_specdec.engines.sglang.methods import (
    BY_METHOD,
    DRAFT_CHECKPOINT,
    DRAFT_NONE,
    k_flags,
    method_row,
    same_algorithm,
)
from nim_specdec.engines.sglang.native_args import NativeArgs
from nim_specdec.engines.sglang.options import spelling_of
from nim_specdec.errors import ConfigError

WHERE = "speculative_config"
# vLLM keys SGLang has a flag for: the key, the field it sets.
DRAFT_KEYS = {"quantization": "speculative_draft_model_quantization", "revision": "speculative_draft_model_revision"}
# n-gram's match window: SGLang 0.5 matches suffixes of any length up to --speculative-ngram-max-trie-depth.
NGRAM_WINDOW_KEYS = ("prompt_lookup_max", "prompt_lookup_min")
SCHEDULE_KEY = "num_speculative_tokens_per_batch_size"
HANDLED = ("method", "model", "num_speculative_tokens", *DRAFT_KEYS, *NGRAM_WINDOW_KEYS)


@dataclass(frozen=True)
class SpeculativeFlags:
    fields: tuple[tuple[str, str | None], ...]  # (SGLang field, value), translated then overridden; None: a flag
    notes: tuple[str, ...]  # one line each: a key dropped, a translated value the user's own argument replaced

    def argv(self) -> tuple[str, ...]:
        """The flags as SGLang's command line takes them."""
        out: list[str] = []
        for field, value in self.fields:
            out.append(spelling_of(field))
            if value is not None:
                out.append(value)
        return tuple(out)


def _shown(value: object) -> str:
    """A config value as the user wrote it in JSON, cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _k(config: Mapping[str, object]) -> int | None:
    k = config.get("num_speculative_tokens")
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1024:
        raise ConfigError(f"{WHERE}.num_speculative_tokens", f"invalid value {k!r}", "use an integer from 1 to 1024")
    return k


def check_layer(config: Mapping[str, object], where: str = WHERE) -> dict[str, object]:
    """What one layer of the config can be refused for alone (`where` names it): a K schedule, a key SGLang has no
    counterpart for, a method it lacks."""
    if SCHEDULE_KEY in config:
        raise ConfigError(
            f"{where}.{SCHEDULE_KEY}",
            f"SGLang 0.5 has no per-batch-size K schedule (got {_shown(config[SCHEDULE_KEY])})",
            "drop it, or pass --speculative-adaptive for SGLang's own K by batch size",
        )
    unknown = [key for key in config if key not in HANDLED]
    if unknown:
        key = unknown[0]
        raise ConfigError(
            f"{where}.{key}",
            f"SGLang 0.5 has no counterpart for {key}={_shown(config[key])}",
            "drop the key, or give SGLang's own --speculative-* argument",
        )
    if config.get("method") is not None:
        method_row(config["method"], f"{where}.method")
    return dict(config)


def translate_config(config: Mapping[str, object]) -> SpeculativeFlags:
    """The vLLM-form config (its draft already an absolute path) as SGLang fields, with notes of what was dropped."""
    check_layer(config)
    if config.get("method") is None:
        raise ConfigError(
            f"{WHERE}.method",
            "is not set: SGLang does not infer the method from the draft's name, as vLLM does",
            f"set method ({', '.join(BY_METHOD)})",
        )
    row = method_row(config.get("method"), f"{WHERE}.method")
    fields: list[tuple[str, str | None]] = [("speculative_algorithm", row.algorithm)]
    notes: list[str] = []
    model = config.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigError(f"{WHERE}.model", f"invalid value {model!r}", "use the draft's path")
    if row.draft == DRAFT_NONE and model is not None:
        raise ConfigError(f"{WHERE}.model", f"{row.method} takes no draft (got {model[:200]!r})", "drop `model`")
    if row.draft == DRAFT_CHECKPOINT and model is None and row.algorithm != "DSPARK":
        raise ConfigError(
            f"{WHERE}.model", f"{row.method} needs a draft checkpoint", "set `model` (and NIM_DRAFT_MODEL_PATH)"
        )
    if model is not None:
        fields.append(("speculative_draft_model_path", model))
    k = _k(config)
    if k is not None:
        fields.extend((field.removeprefix("--").replace("-", "_"), value) for field, value in k_flags(row, k))
    for key, field in DRAFT_KEYS.items():
        if config.get(key) is not None:
            fields.append((field, str(config[key])))
    for key in NGRAM_WINDOW_KEYS:
        if key in config:
            notes.append(
                f"{WHERE}.{key}={config[key]!r} dropped: SGLang's n-gram matches suffixes up to "
                "--speculative-ngram-max-trie-depth tokens long (default 18), with no window of its own"
            )
    return SpeculativeFlags(tuple(fields), tuple(notes))


def merge_native(translated: SpeculativeFlags | None, native: NativeArgs) -> SpeculativeFlags:
    """The translated fields with the user's own SGLang speculative arguments over them (NIM's precedence: the engine's
    native arguments win over the NIM_SPECDEC_* layer). A native algorithm other than the translated one replaces
    the translated set whole: its K and draft belong to another method."""
    given = native.speculative_fields()
    if translated is None:
        return SpeculativeFlags(tuple(given.items()), ())
    mine = dict(translated.fields)
    notes = list(translated.notes)
    asked = given.get("speculative_algorithm")
    if asked is not None and not same_algorithm(asked, str(mine["speculative_algorithm"])):
        notes.append(
            f"--speculative-algorithm {asked} given: the speculative config's "
            f"{mine.get('speculative_algorithm')} flags are not used"
        )
        return SpeculativeFlags(tuple(given.items()), tuple(notes))
    for field, value in given.items():
        same = field == "speculative_algorithm" and same_algorithm(str(value), str(mine[field]))
        if field in mine and mine[field] != value and not same:
            notes.append(f"{spelling_of(field)} {value} given wins over {mine[field]} from the speculative config")
        mine[field] = value
    return SpeculativeFlags(tuple(mine.items()), tuple(notes))
