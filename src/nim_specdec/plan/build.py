"""The plan: everything `serve` will do, decided from plain data before anything is touched.

build_plan is pure and returns an immutable Plan (plan.plan_model). The shell gathers facts about the
sources the plan's front names (plan.plan_front: local directories, their config.json) and then builds
the plan once, from that front; both take microseconds.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Sequence

from nim_specdec.capture.launcher import capture_middleware_args
from nim_specdec.plan.engine.compile_dirs import cache_key, compile_cache_plan
from nim_specdec.plan.engine.cpu_preload import preload_plan
from nim_specdec.plan.argv.engine_command import ENDPOINTS_MIDDLEWARE, build_argv, program
from nim_specdec.plan.argv.engine_view import engine_view
from nim_specdec.plan.engine.engine_facts import EnginePlan
from nim_specdec.plan.engine.engine_numbers import validate_engine_numbers
from nim_specdec.errors import ConfigError
from nim_specdec.config import variables as var
from nim_specdec.plan.argv.merge import engine_layers, merge_engine
from nim_specdec.plan.plan_model import CapturePlan, DraftPlan, Plan, SpeculativePlan, TargetPlan
from nim_specdec.plan.plan_sections import Launch
from nim_specdec.plan.method.method_infer import effective_method
from nim_specdec.plan.engine.runner_choice import target_platform
from nim_specdec.plan.schedule.runner_plan import plan_model_runner
from nim_specdec.config.tuned_for import tuned_for_warning
from nim_specdec.text.redact import MASK, is_secret_key, mask_json, redact_argv
from nim_specdec.plan.schedule.spec_schedule import KEY as SCHEDULE_KEY, describe_schedule, validate_batch_size_schedule
from nim_specdec.plan.method.target import served_names, vllm_model
from nim_specdec.plan.engine.vllm_schema import VllmKnowledge
from nim_specdec.plan.plan_facts import Facts
from nim_specdec.plan.plan_input import PlannerInput
from nim_specdec.plan.engine.release_changes import is_custom_method
from nim_specdec.plan.plan_front import Front, plan_front
from nim_specdec.plan.argv.command_view import read_command, served_name_warning


def _reason(enabled: bool, config: dict, origin: dict, base: Sequence, base_reason: str, known: VllmKnowledge) -> str:
    if not enabled:
        return "off: NIM_SPECDEC_ENABLE is 0 and no --speculative-config was given"
    method = config.get("method")
    source = origin.get("method")
    if source in ("builtin", "auto") or (source is None and base):
        return base_reason
    if method is None:
        inferred = effective_method(config, None, known)
        return f"{inferred}: inferred by vLLM from the draft {config.get('model')!r} (the config names no method)"
    label = {"cli": "the --speculative-config argument"}.get(source or "", source or "the given config")
    text = f"{method} set by {label}"
    base_method = base[0][1].get("method") if base else None
    if base_method and base_method != method:
        text += f", replacing the {base_method} of the {base_reason}"
    return text


def _schedule_view(config: Mapping[str, Any], known: VllmKnowledge) -> list[dict[str, Any]] | None:
    """K per batch size when the config has a schedule (already validated), else None; None too for a
    schedule a release without a snapshot is left to judge, where it is not valid by the known rules."""
    if config.get(SCHEDULE_KEY) is None:
        return None
    try:
        return describe_schedule(validate_batch_size_schedule(config[SCHEDULE_KEY], None, SCHEDULE_KEY))
    except ConfigError:
        if known.exact:
            raise
        return None


def _launch(argv: Sequence[str], compile_env: Mapping[str, str], preload: str | None) -> Launch:
    """What is exec'd, as planned: the hand-off may still move the compile cache (launch/compile_cache/claim.py)."""
    return Launch(tuple(argv), {**compile_env, **({"LD_PRELOAD": preload} if preload else {})})


def build_plan(given: PlannerInput, cli_tokens: Sequence[str], facts: Facts, front: Front | None = None) -> Plan:
    """`front`: plan_front's result for these very arguments and facts, when the caller has it already."""
    known = facts.vllm
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

    view = engine_view(lower, [*pt.options, *cli.options], known)
    if known.exact:  # its ranges are a known release's
        validate_engine_numbers(view, engine_origin)
    method = effective_method(config, front.draft_config, known) if enabled else None
    platform = facts.platform or target_platform(facts.flavor, facts.vllm_version)
    model_runner, runner_warnings = plan_model_runner(
        facts.vllm_version,
        platform,
        given.use_v2_model_runner,
        view,
        config if enabled else None,
        method,
        origin,
    )
    warnings += runner_warnings
    tuned = tuned_for_warning(
        given.tuned_for,
        model_runner.vllm_version,
        model_runner.runner,
        model_runner.platform,
        facts.device.name if facts.device else None,
    )
    if tuned:
        warnings.append(tuned)
    model = vllm_model(target, given.workspace)
    middlewares = (ENDPOINTS_MIDDLEWARE, *capture_middleware_args(given.capture)[1::2])
    prefix = program(facts.flavor, facts.python, model, view.get("headless") is True)
    argv = build_argv(
        prefix,
        lower,
        pt.options,
        cli.options,
        config if enabled else None,
        middlewares,
    )
    # What the plan reports is read back from the command itself: one reading of each value.
    carried = read_command(argv, len(prefix), known)
    overridden = served_name_warning(
        given.engine.served_model_name, carried.served_model_names, engine_origin.get("served_model_name", "")
    )
    if overridden:
        warnings.append(overridden)
    names = list(carried.served_model_names)
    if enabled:
        config = carried.spec or {}
        method = effective_method(config, front.draft_config, known)
    target_facts = facts.sources.get(target.source.uri) if target.source else None
    draft_facts = facts.sources.get(draft.source.uri) if draft else None
    key = cache_key(
        facts.flavor,
        facts.vllm_version,
        target.source.uri if target.source else target.model_arg,
        draft.source.uri if draft else None,
        config if enabled else None,
        view,
    )
    compile_cache = compile_cache_plan(given.cache_path, key, given.compile_cache_user_set)
    cpu_preload = preload_plan(facts.flavor, facts.cpu_preloads, given.ld_preload_set)
    capture = given.capture
    return Plan(
        mode=target.mode,
        target=TargetPlan(
            model=model,
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
            reason=_reason(enabled, config, origin, base, base_reason, known),
            config=MappingProxyType(dict(config)) if enabled else None,
            origin=MappingProxyType(dict(origin) if enabled else {}),
            batch_size_schedule=_schedule_view(config, known) if enabled else None,
            custom_method=method if enabled and is_custom_method(method, known) else None,
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
        workspace=given.workspace,
        cache_path=given.cache_path,
        compile_cache=compile_cache,
        cpu_preload=cpu_preload,
        argv=tuple(redact_argv(argv)),
        env=MappingProxyType(dict(given.shown_env)),
        warnings=tuple(warnings),
        ignored_variables=given.ignored,
        model_runner=model_runner,
        engine=EnginePlan(known.version or None, facts.flavor, known.snapshot, known.exact, facts.device),
        capture=None if capture is None else CapturePlan(capture.path, capture.format, capture.endpoint_pattern),
        launch=_launch(argv, compile_cache.env, cpu_preload.LD_PRELOAD),
        vllm_version=facts.vllm_version,
    )
