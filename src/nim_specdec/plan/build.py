"""The plan: everything `serve` will do, decided from plain data before anything is touched.

build_plan is pure and returns an immutable Plan (plan.plan_model). The shell gathers facts about the
sources the plan's front names (plan.plan_front: local directories, their config.json) and then builds
the plan once, from that front; both take microseconds.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Sequence

from nim_specdec.config import variables as var
from nim_specdec.engines.protocol.engine import CommandRequest, Engine
from nim_specdec.plan.merge import engine_layers, merge_engine
from nim_specdec.plan.method.target import served_names, vllm_model
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_front import Front, plan_front
from nim_specdec.plan.plan_input import PlannerInput
from nim_specdec.plan.plan_model import CapturePlan, DraftPlan, Plan, SpeculativePlan, TargetPlan
from nim_specdec.plan.plan_sections import Launch
from nim_specdec.text.redact import MASK, is_secret_key, mask_json, redact_argv


def _reason(enabled: bool, config: dict, origin: dict, base: Sequence, base_reason: str, engine: Engine) -> str:
    if not enabled:
        return "off: NIM_SPECDEC_ENABLE is 0 and no --speculative-config was given"
    method = config.get("method")
    source = origin.get("method")
    if source in ("builtin", "auto") or (source is None and base):
        return base_reason
    if method is None:
        inferred = engine.effective_method(config, None)
        draft = config.get("model")
        return f"{inferred}: inferred by {engine.title} from the draft {draft!r} (the config names no method)"
    label = {"cli": "the --speculative-config argument"}.get(source or "", source or "the given config")
    text = f"{method} set by {label}"
    base_method = base[0][1].get("method") if base else None
    if base_method and base_method != method:
        text += f", replacing the {base_method} of the {base_reason}"
    return text


def build_plan(given: PlannerInput, cli_tokens: Sequence[str], facts: Facts, front: Front | None = None) -> Plan:
    """`front`: plan_front's result for these very arguments and facts, when the caller has it already."""
    engine = facts.the_engine()
    front = front or plan_front(given, cli_tokens, facts)
    warnings = list(front.warnings)
    cli, pt, engine_env, target, enabled = front.cli, front.pt, front.engine_env, front.target, front.enabled
    config, origin, draft, base, base_reason = front.config, front.origin, front.draft, front.base, front.base_reason

    names = served_names(target, given.engine.served_model_name)
    lower, engine_origin = merge_engine(engine_layers(given.engine, names, engine_env))
    for option in pt.options:
        engine_origin[option.name] = var.PASSTHROUGH_ARGS
    for option in cli.options:
        engine_origin[option.name] = "cli"
    engine_origin.pop("_positional", None)
    command = engine.command(
        CommandRequest(
            lower=lower,
            origin=engine_origin,
            pt=pt,
            cli=cli,
            config=config if enabled else None,
            config_origin=origin,
            draft_config=front.draft_config,
            model=vllm_model(target, given.locations.workspace),
            served_name_variable=given.engine.served_model_name,
            capture=given.capture,
            cache_path=given.locations.cache_path,
            cache_sources=(
                target.source.uri if target.source else target.model_arg,
                draft.source.uri if draft else None,
            ),
            tuned_for=given.tuned_for,
        )
    )
    warnings += command.warnings
    view, names, method = command.view, list(command.served_model_names), command.method
    if enabled:
        config = dict(command.config or {})
    target_facts = facts.sources.get(target.source.uri) if target.source else None
    draft_facts = facts.sources.get(draft.source.uri) if draft else None
    capture = given.capture
    return Plan(
        mode=target.mode,
        target=TargetPlan(
            model=vllm_model(target, given.locations.workspace),
            source=target.source.uri if target.source else target.model_arg,
            chosen_by=target.where,
            builtin=target.builtin.model_id if target.builtin else None,
            served_model_name=names[0] if names else None,
            served_model_names=tuple(names),
            local_dir=target_facts.local_dir if target_facts else None,
            commit=target_facts.commit if target_facts else None,
            commit_reason=target_facts.commit_reason if target_facts else None,
            ref=target.source,
        ),
        speculative=SpeculativePlan(
            enabled=enabled,
            method=method,
            reason=_reason(enabled, config, origin, base, base_reason, engine),
            config=MappingProxyType(dict(config)) if enabled else None,
            origin=MappingProxyType(dict(origin) if enabled else {}),
            batch_size_schedule=engine.schedule_view(config) if enabled else None,
            custom_method=method if enabled and engine.is_custom_method(method) else None,
        ),
        draft=None
        if draft is None
        else DraftPlan(
            name=draft.name,
            source=draft.source.uri,
            path=draft.path,
            chosen_by=draft.chosen_by,
            local_dir=draft_facts.local_dir if draft_facts else None,
            commit=draft_facts.commit if draft_facts else None,
            commit_reason=draft_facts.commit_reason if draft_facts else None,
            ref=draft.source,
        ),
        engine_args=MappingProxyType({k: (MASK if is_secret_key(k) else mask_json(v)) for k, v in view.items()}),
        engine_origin=MappingProxyType(dict(engine_origin)),
        workspace=given.locations.workspace,
        cache_path=given.locations.cache_path,
        compile_cache=command.compile_cache,
        cpu_preload=command.cpu_preload,
        argv=tuple(redact_argv(command.argv)),
        env=MappingProxyType(dict(given.shown_env)),
        warnings=tuple(warnings),
        ignored_variables=given.ignored,
        model_runner=command.model_runner,
        engine=command.engine,
        capture=None if capture is None else CapturePlan(capture.path, capture.format, capture.endpoint_pattern),
        # What is exec'd, as planned: the hand-off may still move the compile cache (launch/compile_cache/claim.py).
        launch=Launch(command.argv, dict(command.env)),
        vllm_version=facts.vllm_version,
    )
