"""VllmEngine: vLLM as the planner sees it (engines.protocol.engine.Engine), over the release's snapshot and this
machine's installation; each method answers from the rules of the sub-packages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nim_specdec.capture.launcher import capture_middleware_args
from nim_specdec.config.tuned_for import tuned_for_warning
from nim_specdec.engines.protocol.engine import CommandRequest, EngineCommand, Installation, MergedSpec
from nim_specdec.engines.protocol.sections import EnginePlan, ScheduleRow
from nim_specdec.engines.vllm.argv.command_view import read_command, served_name_warning
from nim_specdec.engines.vllm.argv.engine_command import ENDPOINTS_MIDDLEWARE, build_argv, program
from nim_specdec.engines.vllm.argv.engine_view import engine_view, lower_view_of, tensor_parallel
from nim_specdec.engines.vllm.argv.user_args import ParsedArgs, parse_vllm_args
from nim_specdec.engines.vllm.release.compile_dirs import cache_key, compile_cache_plan
from nim_specdec.engines.vllm.release.cpu_preload import preload_plan
from nim_specdec.engines.vllm.release.engine_numbers import validate_engine_numbers
from nim_specdec.engines.vllm.release.host_vars import VllmHost, read_vllm_host
from nim_specdec.engines.vllm.release.methods import method_row
from nim_specdec.engines.vllm.release.release_changes import deprecation_warnings, is_custom_method
from nim_specdec.engines.vllm.release.runner_choice import target_platform
from nim_specdec.engines.vllm.release.vllm_schema import VllmKnowledge, knowledge_for, resolve_option
from nim_specdec.engines.vllm.schedule.runner_plan import plan_model_runner
from nim_specdec.engines.vllm.schedule.spec_schedule import KEY as SCHEDULE_KEY
from nim_specdec.engines.vllm.schedule.spec_schedule import describe_schedule, validate_batch_size_schedule
from nim_specdec.engines.vllm.spec.arctic import refuse_arctic_plugin
from nim_specdec.engines.vllm.spec.method_infer import effective_method, infer_method, is_custom_proposer
from nim_specdec.engines.vllm.spec.spec_schema import normalise_keys, validate_complete, validate_fields
from nim_specdec.errors import ConfigError


@dataclass(frozen=True)
class VllmEngine:
    installation: Installation
    known: VllmKnowledge = field(init=False, compare=False)
    host: VllmHost = field(init=False, compare=False)  # vLLM's own variables, read once from the installation's
    name: str = "vllm"
    title: str = "vLLM"

    def __post_init__(self) -> None:
        object.__setattr__(self, "known", knowledge_for(self.installation.version))
        object.__setattr__(self, "host", read_vllm_host(self.installation.environ))

    @property
    def exact(self) -> bool:
        return self.known.exact

    def release(self) -> str:
        return self.known.release()

    def unknown_warning(self) -> str:
        return self.known.unknown_warning()

    def refuse_before_start(self) -> None:
        refuse_arctic_plugin(self.host.arctic_plugin, self.installation.version)

    def read_args(self, tokens: Sequence[str], where: str) -> ParsedArgs:
        return parse_vllm_args(list(tokens), where, self.known)

    def option_name(self, flag: str) -> str | None:
        return resolve_option(flag, self.known)

    def check_spec_layer(self, values: Mapping[str, Any], where: str) -> dict[str, Any]:
        values = normalise_keys(values, where)
        if self.known.exact:  # a release without a snapshot: vLLM's own check alone
            validate_fields(values, where, self.known)
        return values

    def check_spec(self, merged: MergedSpec) -> tuple[str, ...]:
        if not self.known.exact:
            return ()
        lower = lower_view_of(dict(merged.engine_env), merged.pt, merged.cli, self.known)  # type: ignore[arg-type]
        validate_complete(
            merged.config, merged.label, tensor_parallel(lower), merged.draft_config, self.known, merged.where_of
        )
        return tuple(deprecation_warnings(merged.config, self.known))

    def infer_method(self, model: Any, draft_config: Mapping[str, Any] | None) -> str | None:
        return infer_method(model, draft_config, self.known)

    def effective_method(self, config: Mapping[str, Any], draft_config: Mapping[str, Any] | None) -> str | None:
        return effective_method(config, draft_config, self.known)

    def is_custom_method(self, method: Any) -> bool:
        return is_custom_method(method, self.known)

    def needs_model(self, method: Any) -> bool:
        row = method_row(method)
        return row is not None and row.needs_model

    def is_custom_proposer(self, model: Any) -> bool:
        return is_custom_proposer(model)

    def parallel_drafter(self, method: Any) -> bool:
        row = method_row(method)
        return row is not None and row.parallel

    def mtp_drafter(self, model_type: Any, architecture: Any, text_model_type: Any) -> str | None:
        return self.known.mtp_drafter(model_type, architecture, text_model_type)

    def schedule_view(self, config: Mapping[str, Any]) -> list[ScheduleRow] | None:
        """None too for a schedule a release without a snapshot is left to judge, where it is not valid by the
        known rules."""
        if config.get(SCHEDULE_KEY) is None:
            return None
        try:
            return describe_schedule(validate_batch_size_schedule(config[SCHEDULE_KEY], None, SCHEDULE_KEY))
        except ConfigError:
            if self.known.exact:
                raise
            return None

    def command(self, request: CommandRequest) -> EngineCommand:
        known, installed = self.known, self.installation
        view = engine_view(dict(request.lower), [*request.pt.options, *request.cli.options], known)
        if known.exact:  # its ranges are a known release's
            validate_engine_numbers(view, request.origin)
        config = request.config
        method = effective_method(config, request.draft_config, known) if config is not None else None
        platform = installed.platform or target_platform(installed.flavor, installed.version)
        model_runner, warnings = plan_model_runner(
            installed.version, platform, self.host.use_v2_model_runner, view, config, method, request.config_origin
        )
        tuned = tuned_for_warning(
            request.tuned_for,
            model_runner.vllm_version,
            model_runner.runner,
            model_runner.platform,
            installed.device.name if installed.device else None,
        )
        middlewares = (ENDPOINTS_MIDDLEWARE, *capture_middleware_args(request.capture)[1::2])
        prefix = program(installed.flavor, installed.python, request.model, view.get("headless") is True)
        argv = build_argv(prefix, request.lower, request.pt.options, request.cli.options, config, middlewares)
        # What the plan reports is read back from the command itself: one reading of each value.
        carried = read_command(argv, len(prefix), known)
        overridden = served_name_warning(
            request.served_name_variable, carried.served_model_names, request.origin.get("served_model_name", "")
        )
        if config is not None:
            config = carried.spec or {}
            method = effective_method(config, request.draft_config, known)
        target, draft = request.cache_sources
        key = cache_key(installed.flavor, installed.version, target, draft, config, view)
        compile_cache = compile_cache_plan(request.cache_path, key, self.host.compile_cache_user_set)
        cpu_preload = preload_plan(installed.flavor, installed.cpu_preloads, self.host.ld_preload_set)
        preload = cpu_preload.LD_PRELOAD
        return EngineCommand(
            argv=tuple(argv),
            view=view,
            served_model_names=carried.served_model_names,
            config=config,
            method=method,
            model_runner=model_runner,
            compile_cache=compile_cache,
            cpu_preload=cpu_preload,
            engine=EnginePlan(
                known.version or None,
                installed.flavor,
                known.snapshot,
                known.exact,
                installed.device,
                self.name,
                known.version or None,
            ),
            env={**compile_cache.env, **({"LD_PRELOAD": preload} if preload else {})},
            warnings=(*warnings, *(w for w in (tuned, overridden) if w)),
        )
