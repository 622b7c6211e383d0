"""The first half of build_plan: the arguments parsed, the target, the merged speculative config and the draft.

It is what names the sources, so the shell runs it alone while it gathers facts about them (launch/resolve.py:
each pass may bring a source's config.json, which may name a draft) and builds the whole plan once, from the
front the last pass made. Pure, like build_plan.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Sequence

from nim_specdec.config import variables as var
from nim_specdec.plan.method.arctic import refuse_arctic_plugin
from nim_specdec.plan.method.draft import Draft, resolve_draft
from nim_specdec.plan.argv.engine_view import lower_view_of, tensor_parallel
from nim_specdec.plan.argv.merge import merge_spec, refuse_launcher_arguments
from nim_specdec.plan.method.method_choice import choose
from nim_specdec.plan.method.method_infer import infer_method
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_input import PlannerInput
from nim_specdec.plan.engine.release_changes import deprecation_warnings
from nim_specdec.config.sources import SourceRef
from nim_specdec.plan.method.spec_schema import normalise_keys, validate_complete, validate_fields
from nim_specdec.plan.method.target import Target, resolve_target, unused_model_variables
from nim_specdec.plan.argv.user_args import ParsedArgs, parse_vllm_args
from nim_specdec.plan.engine.vllm_schema import VllmKnowledge
from nim_specdec.errors import ConfigError


@dataclass(frozen=True)
class Front:
    warnings: tuple[str, ...]
    cli: ParsedArgs
    pt: ParsedArgs
    engine_env: dict[str, Any]  # NIM_SPECDEC_ARGS' engine keys
    target: Target
    enabled: bool
    base: tuple[tuple[str, dict[str, Any]], ...]  # the built-in or auto-chosen layer, if any
    base_reason: str
    config: dict[str, Any]  # merged speculative config (model rewritten to the draft's workspace path)
    origin: dict[str, str]
    draft: Draft | None
    draft_config: dict[str, Any] | None  # the draft's config.json, where the facts hold it


def named_sources(front: Front, draft_source: SourceRef | None) -> tuple[tuple[SourceRef, str], ...]:
    """The sources the plan will name, typed, each with where it was named (`draft_source`: NIM_DRAFT_MODEL_PATH)."""
    refs: list[tuple[SourceRef, str]] = []
    if front.target.source is not None:
        refs.append((front.target.source, front.target.where))
    if draft_source is not None and front.enabled:
        refs.append((draft_source, var.DRAFT_MODEL_PATH))
    if front.draft is not None:
        refs.append((front.draft.source, front.draft.chosen_by))
    return tuple(refs)


def _layer_where(label: str) -> str:
    """How a one-line error names a layer of the speculative config."""
    return "--speculative-config" if label == "cli" else label


def _spec_layers(spec_env: dict | None, pt: ParsedArgs, cli: ParsedArgs, known: VllmKnowledge) -> list:
    layers = [
        (var.SPECDEC_ARGS, spec_env),
        (var.PASSTHROUGH_ARGS, pt.spec),
        ("cli", cli.spec),
    ]
    out = []
    for label, values in layers:
        if values is None:
            continue
        where = _layer_where(label)
        if not values:
            # vLLM builds a SpeculativeConfig from {} and fails for want of num_speculative_tokens
            raise ConfigError(
                where,
                "speculative_config {} is refused by vLLM (no method, model or num_speculative_tokens)",
                'give a config such as {"method": "ngram", "num_speculative_tokens": 3}, or leave it out',
            )
        values = normalise_keys(values, where)
        if known.exact:  # a release without a snapshot: vLLM's own check alone
            validate_fields(values, where, known)
        out.append((label, values))
    return out


def _explicitly_off(pt: ParsedArgs, cli: ParsedArgs) -> str | None:
    """vLLM reads `--speculative-config null` (or "" or None) as no speculation; the last source decides."""
    for label, parsed in (("the --speculative-config argument", cli), (var.PASSTHROUGH_ARGS, pt)):
        if parsed.spec_given:
            return label if parsed.spec is None else None
    return None


def _base_layer(
    enable: bool, draft_source: SourceRef | None, target: Target, explicit: list, facts: Facts
) -> tuple[list, str | None, str]:
    """The config explicit layers are merged onto: built-in, auto-chosen, or none."""
    if not enable:
        return [], None, ""
    if target.builtin is not None:
        entry = target.builtin
        return (
            [("builtin", entry.speculative_config)],
            entry.draft_source,
            f"built-in config for {entry.model_id} ({entry.file})",
        )
    if any("method" in values or "model" in values for _, values in explicit):
        registered = target.registered
        return [], (registered.draft_source if registered else None), ""
    target_facts = facts.sources.get(target.source.uri) if target.source else None
    draft_facts = facts.sources.get(draft_source.uri) if draft_source else None
    choice = choose(
        target_facts.config if target_facts else None,
        target.registered,
        draft_source is not None,
        draft_facts.config if draft_facts else None,
        facts.vllm,
    )
    return [("auto", choice.config)], choice.draft_source, f"auto-chosen for model-free mode: {choice.reason}"


def _draft_config(draft: Draft | None, facts: Facts) -> dict | None:
    found = facts.sources.get(draft.source.uri) if draft is not None else None
    return found.config if found else None


def _keep_inferred_method(
    config: dict, origin: dict, original: Any, draft_config: dict | None, known: VllmKnowledge
) -> tuple[dict, dict]:
    """vLLM infers a missing method from the draft's name: when the launcher rewrote that name to a
    workspace path, the config and origin with the method the original reference implied, so the meaning is
    kept (new dicts; the ones given when nothing changes)."""
    if config.get("method") is not None or original is None or config.get("model") == original:
        return config, origin
    before, after = infer_method(original, draft_config, known), infer_method(config.get("model"), draft_config, known)
    if before == after:
        return config, origin
    return {**config, "method": before}, {**origin, "method": f"inferred from speculative_config.model {original!r}"}


def plan_front(given: PlannerInput, cli_tokens: Sequence[str], facts: Facts) -> Front:
    known = facts.vllm
    refuse_arctic_plugin(given.arctic_plugin, facts.vllm_version)
    warnings: list[str] = [item.warning() for item in given.ignored]
    if not known.exact:
        warnings.append(known.unknown_warning())
    cli = parse_vllm_args(list(cli_tokens), "argument", known)
    pt = parse_vllm_args(list(given.passthrough_args), var.PASSTHROUGH_ARGS, known)
    spec_env, engine_env = None, {}
    if given.specdec is not None:  # parsed with the settings, NIM_SPECDEC_ENABLE being on
        # This pass's own copies, as a parse per pass gave: nothing the plan builds on them reaches the settings.
        spec_env, engine_env = copy.deepcopy((given.specdec.speculative_config, given.specdec.engine))
        refuse_launcher_arguments(engine_env, known)
    elif given.specdec_args_set:
        warnings.append(
            f"{var.SPECDEC_ARGS} is ignored because {var.SPECDEC_ENABLE} is 0; set {var.SPECDEC_ENABLE}=1 to use it"
        )
    target = resolve_target(
        (cli.model, cli.model_where) if cli.model is not None else None,
        (pt.model, pt.model_where) if pt.model is not None else None,
        given.model_source,
        given.model_name,
        facts.registry,
    )
    warnings += unused_model_variables(target, given.model_source, given.model_name)
    explicit = _spec_layers(spec_env, pt, cli, known)
    off_by = _explicitly_off(pt, cli)
    enabled = (given.enable or any(label != var.SPECDEC_ARGS for label, _ in explicit)) and off_by is None
    if off_by is not None and (given.enable or explicit):
        warnings.append(f"speculative decoding is off: {off_by} sets the speculative config to none, as vLLM reads it")
    base, builtin_draft, base_reason = (
        _base_layer(given.enable, given.draft_source, target, explicit, facts) if enabled else ([], None, "")
    )
    config, origin = merge_spec(base + explicit)
    draft = None
    if enabled:
        if not config:
            raise ConfigError(
                "--speculative-config", "is empty", 'give at least {"method": ..., "num_speculative_tokens": ...}'
            )
        original_model = config.get("model")
        chosen = resolve_draft(config, origin, given.draft_source, builtin_draft, given.workspace)
        draft, config, origin = chosen.draft, chosen.config, chosen.origin
        warnings += chosen.warnings
        config, origin = _keep_inferred_method(config, origin, original_model, _draft_config(draft, facts), known)
        if known.exact:
            validate_complete(
                config,
                f"speculative_config (merged from {', '.join(sorted(set(origin.values())))})",
                tensor_parallel(lower_view_of(engine_env, pt, cli, known)),
                _draft_config(draft, facts),
                known,
                lambda key: _layer_where(origin.get(key, "cli")),
            )
            warnings += deprecation_warnings(config, known)
    elif given.draft_source is not None:
        warnings.append(
            f"{var.DRAFT_MODEL_PATH} is ignored because speculative decoding is off ({var.SPECDEC_ENABLE}=0)"
        )
    return Front(
        tuple(warnings),
        cli,
        pt,
        engine_env,
        target,
        enabled,
        tuple(base),
        base_reason,
        config,
        origin,
        draft,
        _draft_config(draft, facts),
    )
