"""What tune measures and what it recommends, as plain data: candidate speculative configs, the
environment each server is started with, and the recommended variables.

Every server goes through `nim-specdec serve` with the user's own environment and vLLM arguments, so
that what is tuned is what will serve. Only the speculative config is replaced, through NIM_SPECDEC_ENABLE
and NIM_SPECDEC_ARGS (keeping the user's engine keys there); a --speculative-config among the arguments or
in NIM_PASSTHROUGH_ARGS would override those, so it is taken out of the servers' arguments.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nim_specdec.config import variables as var
from nim_specdec.config.specdec_args import SPEC_KEY, parse_specdec_args
from nim_specdec.engines.vllm.argv.user_args import SPEC_OPTION, split_options
from nim_specdec.engines.vllm.schedule.spec_schedule import KEY as SCHEDULE_KEY
from nim_specdec.engines.vllm.schedule.spec_schedule import k_at as schedule_k_at

# Model-free methods tune adds, each with an exact simulator of its acceptance.
MODEL_FREE = ("ngram", "suffix")
SIMULATED = frozenset(MODEL_FREE)


@dataclass(frozen=True)
class Candidate:
    method: str  # also the candidate's name: one candidate per method
    config: Mapping[str, Any]  # speculative_config at the largest K, as a user writes it
    configured: bool  # the user's own configuration (else a model-free method tune adds)

    @property
    def kmax(self) -> int:
        return int(self.config["num_speculative_tokens"])

    @property
    def simulated(self) -> bool:
        return self.method in SIMULATED


def ngram_config(k: int, lookup_min: int, lookup_max: int) -> dict[str, Any]:
    return {
        "method": "ngram",
        "num_speculative_tokens": k,
        "prompt_lookup_min": lookup_min,
        "prompt_lookup_max": lookup_max,
    }


def suffix_config(k: int) -> dict[str, Any]:
    return {"method": "suffix", "num_speculative_tokens": k}


def configured_candidate(
    speculative: Mapping[str, Any], draft: Mapping[str, Any] | None, kmax: int
) -> Candidate | None:
    """The user's speculative config from the plan's public JSON (`speculative` and `draft` sections),
    with a draft reference put back the way the user wrote it (the plan holds the workspace path)."""
    if not speculative.get("enabled") or not speculative.get("config"):
        return None
    config = {k: v for k, v in speculative["config"].items() if k != SCHEDULE_KEY}
    if draft and draft.get("path") == config.get("model"):
        if draft.get("chosen_by") == "speculative_config.model" and "://" in str(draft.get("source")):
            config["model"] = draft["source"]
        elif draft.get("name"):
            config["model"] = draft["name"]
    if config.get("num_speculative_tokens") is None:
        config["num_speculative_tokens"] = kmax
    return Candidate(str(config["method"]), config, configured=True)


TRAINED_METHOD = "eagle3"  # what `draft train` exports


def trained_draft_candidate(draft_dir: str, acceptance: Mapping[str, Any] | None, default_k: int) -> Candidate:
    """A draft `draft train` made, served by its absolute path at the K it was measured with (its
    acceptance.json; `default_k` when it has none)."""
    k = ((acceptance or {}).get("draft") or {}).get("num_speculative_tokens")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        k = default_k
    return Candidate(TRAINED_METHOD, {"method": TRAINED_METHOD, "model": draft_dir, "num_speculative_tokens": k}, False)


def candidate_list(configured: Candidate | None, model_free: Sequence[Candidate]) -> list[Candidate]:
    """The configured method first; a model-free method the user configured is measured in the user's form."""
    out = [configured] if configured else []
    out += [c for c in model_free if configured is None or c.method != configured.method]
    return out


def strip_spec_args(tokens: Sequence[str]) -> list[str]:
    """vLLM arguments without any --speculative-config form (the whole object or dotted keys)."""
    positionals, groups = split_options(list(tokens))
    out = list(positionals)
    for group in groups:
        bare = group[0].split("=", 1)[0]
        if bare == SPEC_OPTION or bare.startswith(SPEC_OPTION + "."):
            takes_value = "=" not in group[0] and len(group) > 1
            out += group[2:] if takes_value else group[1:]
            continue
        out += group
    return out


def has_spec_args(tokens: Sequence[str]) -> bool:
    return list(tokens) != strip_spec_args(tokens)


def engine_keys(specdec_args: str | None) -> dict[str, Any]:
    """The user's NIM_SPECDEC_ARGS (as the settings read it: None when unset or blank) without its
    speculative_config (engine arguments such as max_num_seqs)."""
    return parse_specdec_args(specdec_args)[1] if specdec_args else {}


def spec_env(engine: Mapping[str, Any], config: Mapping[str, Any] | None) -> dict[str, str]:
    """NIM_SPECDEC_ENABLE and NIM_SPECDEC_ARGS for a config (None: speculation off)."""
    if config is None:
        return {var.SPECDEC_ENABLE: "0"}
    return {
        var.SPECDEC_ENABLE: "1",
        var.SPECDEC_ARGS: json.dumps({**engine, SPEC_KEY: dict(config)}, separators=(", ", ": ")),
    }


def candidate_env(
    user_env: Mapping[str, str], engine: Mapping[str, Any], config: Mapping[str, Any] | None
) -> dict[str, str]:
    env = {k: v for k, v in user_env.items() if k != var.SPECDEC_ARGS}
    passthrough = env.get(var.PASSTHROUGH_ARGS)
    if passthrough:
        env[var.PASSTHROUGH_ARGS] = shlex.join(strip_spec_args(shlex.split(passthrough)))
    env.update(spec_env(engine, config))  # off: the launcher ignores NIM_SPECDEC_ARGS, engine keys included
    return env


def zero_k_config(candidate: Candidate) -> dict[str, Any]:
    """The candidate's server with K = 0 at every batch size: a draft model's per-step cost, measured.
    vLLM carries the last range's K on to every larger batch."""
    return {**candidate.config, SCHEDULE_KEY: [[1, 1, 0]]}


def scheduled_config(candidate: Candidate, ranges: Sequence[Sequence[int]]) -> dict[str, Any] | None:
    """The candidate's config with a K per batch size; a uniform K needs no schedule; all zero is off."""
    ks = [r[2] for r in ranges]
    if not any(ks):
        return None
    config = dict(candidate.config)
    config["num_speculative_tokens"] = max(ks)  # the largest K any batch size uses
    if len(set(ks)) > 1:
        config[SCHEDULE_KEY] = [list(r) for r in ranges]
    return config


def k_at(config: Mapping[str, Any], batch: int) -> int:
    """The K a speculative config drafts at a batch size: its schedule's, as vLLM looks it up (a gap or the
    tail carries the previous range's K on; capped at num_speculative_tokens), else num_speculative_tokens."""
    ranges = config.get(SCHEDULE_KEY)
    if not ranges:
        return int(config["num_speculative_tokens"])
    k = schedule_k_at(tuple((int(a), int(b), int(c)) for a, b, c in ranges), batch)
    cap = config.get("num_speculative_tokens")
    return min(k, int(cap)) if cap is not None else k
