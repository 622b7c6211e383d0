"""The plan: everything `serve` will do, decided from plain data before anything is touched.

build_plan is pure and returns an immutable Plan (config.plan_model). The shell calls it once with
what it knows, gathers facts about the sources the plan names (local directories, their config.json),
and calls it again; both calls take microseconds.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nim_specdec.config.arctic import refuse_arctic_plugin
from nim_specdec.config.capture_config import capture_middleware_args
from nim_specdec.config.compile_cache import cache_key, compile_cache_plan
from nim_specdec.config.cpu_preload import preload_plan
from nim_specdec.config.vllm_command import ENDPOINTS_MIDDLEWARE, build_argv, program
from nim_specdec.config.draft import resolve_draft
from nim_specdec.config.engine_view import engine_view, lower_view_of, tensor_parallel
from nim_specdec.config.engine_facts import EnginePlan
from nim_specdec.config.engine_numbers import validate_engine_numbers
from nim_specdec.errors import ConfigError
from nim_specdec.config.merge import merge_engine, merge_spec
from nim_specdec.config.plan_model import CapturePlan, DraftPlan, Plan, SpeculativePlan, TargetPlan
from nim_specdec.config.plan_sections import Launch
from nim_specdec.config.method_infer import effective_method, infer_method
from nim_specdec.config.method_choice import choose
from nim_specdec.config.model_runner import target_platform
from nim_specdec.config.runner_plan import plan_model_runner
from nim_specdec.config.tuned_for import tuned_for_warning
from nim_specdec.common.redact import MASK, is_secret_key, mask_json, redact_argv
from nim_specdec.config.settings import DEFAULT_SHUTDOWN_TIMEOUT, Settings
from nim_specdec.config.specargs import parse_specdec_args
from nim_specdec.config.spec_schema import normalise_keys, validate_complete, validate_fields
from nim_specdec.config.spec_schedule import KEY as SCHEDULE_KEY, describe_schedule, validate_batch_size_schedule
from nim_specdec.config.target import Target, resolve_target, served_name, vllm_model
from nim_specdec.config.vllm_argv import ParsedArgs, parse_vllm_args
from nim_specdec.config.vllm_schema import VllmKnowledge
from nim_specdec.config.plan_facts import Facts


def _spec_layers(
    settings: Settings, spec_env: dict | None, pt: ParsedArgs, cli: ParsedArgs, known: VllmKnowledge
) -> list:
    layers = [
        ("NIM_SPECDEC_ARGS", spec_env),
        ("NIM_PASSTHROUGH_ARGS", pt.spec),
        ("cli", cli.spec),
    ]
    out = []
    for label, values in layers:
        if values is None:
            continue
        where = "--speculative-config" if label == "cli" else label
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
    for label, parsed in (("the --speculative-config argument", cli), ("NIM_PASSTHROUGH_ARGS", pt)):
        if parsed.spec_given:
            return label if parsed.spec is None else None
    return None


def _base_layer(settings: Settings, target: Target, explicit: list, facts: Facts) -> tuple[list, str | None, str]:
    """The config explicit layers are merged onto: built-in, auto-chosen, or none."""
    if not settings.enable:
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
    draft_facts = facts.sources.get(settings.draft_source.uri) if settings.draft_source else None
    choice = choose(
        target_facts.config if target_facts else None,
        target.registered,
        settings.draft_source is not None,
        draft_facts.config if draft_facts else None,
    )
    return [("auto", choice.config)], choice.draft_source, f"auto-chosen for model-free mode: {choice.reason}"


def _draft_config(draft: Any, facts: Facts) -> dict | None:
    found = facts.sources.get(draft.source.uri) if draft is not None else None
    return found.config if found else None


def _keep_inferred_method(
    config: dict, origin: dict, original: Any, draft_config: dict | None, known: VllmKnowledge
) -> None:
    """vLLM infers a missing method from the draft's name: when the launcher rewrote that name to a
    workspace path, write down the method the original reference implied, so the meaning is kept."""
    if config.get("method") is not None or original is None or config.get("model") == original:
        return
    before, after = infer_method(original, draft_config, known), infer_method(config.get("model"), draft_config, known)
    if before != after:
        config["method"], origin["method"] = before, f"inferred from speculative_config.model {original!r}"


def _reason(enabled: bool, config: dict, origin: dict, base: list, base_reason: str, known: VllmKnowledge) -> str:
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
    """What is exec'd, as planned: the hand-off may still move the compile cache (launch/compile_cache_claim)."""
    return Launch(tuple(argv), {**compile_env, **({"LD_PRELOAD": preload} if preload else {})})


def build_plan(settings: Settings, cli_tokens: Sequence[str], facts: Facts) -> Plan:
    known = facts.vllm
    refuse_arctic_plugin(settings.environ, facts.vllm_version)
    warnings: list[str] = [known.unknown_warning()] if not known.exact else []
    cli = parse_vllm_args(list(cli_tokens), "argument", known)
    pt = parse_vllm_args(list(settings.passthrough_args), "NIM_PASSTHROUGH_ARGS", known)
    spec_env, engine_env = None, {}
    if settings.specdec_args is not None:
        if settings.enable:
            spec_env, engine_env = parse_specdec_args(settings.specdec_args)
        else:
            warnings.append(
                "NIM_SPECDEC_ARGS is ignored because NIM_SPECDEC_ENABLE is 0; set NIM_SPECDEC_ENABLE=1 to use it"
            )
    target = resolve_target(
        settings,
        (cli.model, cli.model_where) if cli.model is not None else None,
        (pt.model, pt.model_where) if pt.model is not None else None,
        facts.registry,
    )
    explicit = _spec_layers(settings, spec_env, pt, cli, known)
    off_by = _explicitly_off(pt, cli)
    enabled = (settings.enable or any(label != "NIM_SPECDEC_ARGS" for label, _ in explicit)) and off_by is None
    if off_by is not None and (settings.enable or explicit):
        warnings.append(f"speculative decoding is off: {off_by} sets the speculative config to none, as vLLM reads it")
    base, builtin_draft, base_reason = _base_layer(settings, target, explicit, facts) if enabled else ([], None, "")
    config, origin = merge_spec(base + explicit)
    draft = None
    if enabled:
        if not config:
            raise ConfigError(
                "--speculative-config", "is empty", 'give at least {"method": ..., "num_speculative_tokens": ...}'
            )
        original_model = config.get("model")
        draft = resolve_draft(config, origin, settings.draft_source, builtin_draft, settings.workspace, warnings)
        _keep_inferred_method(config, origin, original_model, _draft_config(draft, facts), known)
        if known.exact:
            validate_complete(
                config,
                f"speculative_config (merged from {', '.join(sorted(set(origin.values())))})",
                tensor_parallel(lower_view_of(engine_env, pt, cli, known)),
                _draft_config(draft, facts),
                known,
            )
    elif settings.draft_source is not None:
        warnings.append("NIM_DRAFT_MODEL_PATH is ignored because speculative decoding is off (NIM_SPECDEC_ENABLE=0)")

    engine_layers = [("default", {"port": settings.port})]
    if settings.shutdown_timeout is None:
        engine_layers.append(("default", {"shutdown_timeout": DEFAULT_SHUTDOWN_TIMEOUT}))
    else:
        engine_layers.append(("NIM_SHUTDOWN_TIMEOUT", {"shutdown_timeout": settings.shutdown_timeout}))
    name = served_name(target, settings)
    if name:
        engine_layers.append(
            ("NIM_SERVED_MODEL_NAME" if settings.served_model_name else "builtin", {"served_model_name": name})
        )
    if settings.max_model_len is not None:
        engine_layers.append(("NIM_MAX_MODEL_LEN", {"max_model_len": settings.max_model_len}))
    engine_layers.append(("NIM_SPECDEC_ARGS", engine_env))
    lower, engine_origin = merge_engine(engine_layers)
    for option in pt.options:
        engine_origin[option.name] = "NIM_PASSTHROUGH_ARGS"
    for option in cli.options:
        engine_origin[option.name] = "cli"
    engine_origin.pop("_positional", None)

    view = engine_view(lower, [*pt.options, *cli.options], known)
    if known.exact:  # its ranges are a known release's
        validate_engine_numbers(view, engine_origin)
    method = effective_method(config, _draft_config(draft, facts), known) if enabled else None
    platform = facts.platform or target_platform(facts.flavor, facts.vllm_version)
    model_runner = plan_model_runner(
        facts.vllm_version,
        platform,
        settings.use_v2_model_runner,
        view,
        config if enabled else None,
        method,
        origin,
        warnings,
    )
    tuned = tuned_for_warning(
        settings.tuned_for,
        model_runner.vllm_version,
        model_runner.runner,
        model_runner.platform,
        facts.device.name if facts.device else None,
    )
    if tuned:
        warnings.append(tuned)
    model = vllm_model(target, settings.workspace)
    middlewares = (ENDPOINTS_MIDDLEWARE, *capture_middleware_args(settings.capture)[1::2])
    argv = build_argv(
        program(facts.flavor, facts.python, model),
        lower,
        pt.options,
        cli.options,
        config if enabled else None,
        middlewares,
    )
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
    compile_cache = compile_cache_plan(settings.cache_path, key, settings.host.compile_cache_user_set)
    cpu_preload = preload_plan(facts.flavor, facts.cpu_preloads, settings.host.ld_preload_set)
    capture = settings.capture
    return Plan(
        mode=target.mode,
        target=TargetPlan(
            model=model,
            source=target.source.uri if target.source else target.model_arg,
            chosen_by=target.where,
            builtin=target.builtin.model_id if target.builtin else None,
            served_model_name=name,
            local_dir=target_facts.local_dir if target_facts else None,
            commit=target_facts.commit if target_facts else None,
            ref=target.source,
        ),
        speculative=SpeculativePlan(
            enabled=enabled,
            method=method,
            reason=_reason(enabled, config, origin, base, base_reason, known),
            config=config if enabled else None,
            origin=origin if enabled else {},
            batch_size_schedule=_schedule_view(config, known) if enabled else None,
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
            ref=draft.source,
        ),
        engine_args={k: (MASK if is_secret_key(k) else mask_json(v)) for k, v in view.items()},
        engine_origin=engine_origin,
        workspace=settings.workspace,
        cache_path=settings.cache_path,
        compile_cache=compile_cache,
        cpu_preload=cpu_preload,
        argv=tuple(redact_argv(argv)),
        env=dict(settings.host.shown_env),
        warnings=tuple(warnings),
        model_runner=model_runner,
        engine=EnginePlan(known.version or None, facts.flavor, known.snapshot, known.exact, facts.device),
        capture=None if capture is None else CapturePlan(capture.path, capture.format, capture.endpoint_pattern),
        launch=_launch(argv, compile_cache.env, cpu_preload.LD_PRELOAD),
        vllm_version=facts.vllm_version,
    )
