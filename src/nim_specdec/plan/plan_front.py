"""What the user asked for, settled against what is known of the sources (the plan's front): the engine's
arguments read, which target, whether speculation is on and from which layers its config is merged, and which
draft that config names. build_plan turns a front into the command; the front alone decides nothing of the engine's
command.

It is what names the sources, so the shell runs it alone while it gathers facts about them (launch/resolve.py:
each pass may bring a source's config.json, which may name a draft) and builds the whole plan once, from the
front the last pass made. Pure, like build_plan.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from nim_specdec.config import variables as var
from nim_specdec.config.sources import SourceRef
from nim_specdec.engines.protocol.engine import Engine, EngineArgs, MergedSpec
from nim_specdec.errors import ConfigError
from nim_specdec.plan.merge import merge_spec, refuse_launcher_arguments
from nim_specdec.plan.method.draft import Draft, resolve_draft
from nim_specdec.plan.method.method_choice import choose
from nim_specdec.plan.method.target import Target, resolve_target, unused_model_variables
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_input import PlannerInput


@dataclass(frozen=True)
class Front:
    warnings: tuple[str, ...]
    cli: EngineArgs
    pt: EngineArgs
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


def _spec_layers(spec_env: dict | None, pt: EngineArgs, cli: EngineArgs, engine: Engine) -> list:
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
        out.append((label, engine.check_spec_layer(values, where)))
    return out


def _where_of(origin: dict[str, str]) -> Callable[[str], str]:
    """How a one-line error names the layer that gave a key of the merged config."""
    return lambda key: _layer_where(origin.get(key, "cli"))


def _explicitly_off(pt: EngineArgs, cli: EngineArgs) -> str | None:
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
        facts.the_engine(),
    )
    return [("auto", choice.config)], choice.draft_source, f"auto-chosen for model-free mode: {choice.reason}"


def _draft_config(draft: Draft | None, facts: Facts) -> dict | None:
    found = facts.sources.get(draft.source.uri) if draft is not None else None
    return found.config if found else None


def _keep_inferred_method(
    config: dict, origin: dict, original: Any, draft_config: dict | None, engine: Engine
) -> tuple[dict, dict]:
    """vLLM infers a missing method from the draft's name: when the launcher rewrote that name to a
    workspace path, the config and origin with the method the original reference implied, so the meaning is
    kept (new dicts; the ones given when nothing changes)."""
    if config.get("method") is not None or original is None or config.get("model") == original:
        return config, origin
    before, after = engine.infer_method(original, draft_config), engine.infer_method(config.get("model"), draft_config)
    if before == after:
        return config, origin
    return {**config, "method": before}, {**origin, "method": f"inferred from speculative_config.model {original!r}"}


def plan_front(given: PlannerInput, cli_tokens: Sequence[str], facts: Facts) -> Front:
    engine = facts.the_engine()
    engine.refuse_before_start()
    warnings: list[str] = [item.warning() for item in given.ignored]
    if not engine.exact:
        warnings.append(engine.unknown_warning())
    cli = engine.read_args(cli_tokens, "argument")
    wished, asked = given.speculation, given.target
    pt = engine.read_args(asked.passthrough_args, var.PASSTHROUGH_ARGS)
    spec_env, engine_env = None, {}
    if wished.specdec is not None:  # parsed with the settings, NIM_SPECDEC_ENABLE being on
        # This pass's own copies, as a parse per pass gave: nothing the plan builds on them reaches the settings.
        spec_env, engine_env = copy.deepcopy((wished.specdec.speculative_config, wished.specdec.engine))
        refuse_launcher_arguments(engine_env, engine.option_name)
    elif wished.args_set:
        warnings.append(
            f"{var.SPECDEC_ARGS} is ignored because {var.SPECDEC_ENABLE} is 0; set {var.SPECDEC_ENABLE}=1 to use it"
        )
    target = resolve_target(
        (cli.model, cli.model_where) if cli.model is not None else None,
        (pt.model, pt.model_where) if pt.model is not None else None,
        asked.model_source,
        asked.model_name,
        facts.registry,
    )
    warnings += unused_model_variables(target, asked.model_source, asked.model_name)
    explicit = _spec_layers(spec_env, pt, cli, engine)
    off_by = _explicitly_off(pt, cli)
    enabled = (wished.enable or any(label != var.SPECDEC_ARGS for label, _ in explicit)) and off_by is None
    if off_by is not None and (wished.enable or explicit):
        warnings.append(f"speculative decoding is off: {off_by} sets the speculative config to none, as vLLM reads it")
    base, builtin_draft, base_reason = (
        _base_layer(wished.enable, wished.draft_source, target, explicit, facts) if enabled else ([], None, "")
    )
    config, origin = merge_spec(base + explicit)
    draft = None
    if enabled:
        if not config:
            raise ConfigError(
                "--speculative-config", "is empty", 'give at least {"method": ..., "num_speculative_tokens": ...}'
            )
        original_model = config.get("model")
        chosen = resolve_draft(config, origin, wished.draft_source, builtin_draft, given.locations.workspace, engine)
        draft, config, origin = chosen.draft, chosen.config, chosen.origin
        warnings += chosen.warnings
        config, origin = _keep_inferred_method(config, origin, original_model, _draft_config(draft, facts), engine)
        label = f"speculative_config (merged from {', '.join(sorted(set(origin.values())))})"
        merged = MergedSpec(config, label, engine_env, pt, cli, _draft_config(draft, facts), _where_of(origin))
        warnings += engine.check_spec(merged)
    elif wished.draft_source is not None:
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
