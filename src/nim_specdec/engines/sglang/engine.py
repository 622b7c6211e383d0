"""SglangEngine: SGLang 0.5 as the planner sees it (engines.protocol.engine.Engine). The user's arguments are read
as SGLang's parser reads them, the guide's vLLM-form config is checked by translating it, and the command is
`python -m sglang.launch_server ...`; vLLM's model runner, compile cache and preloads are not used (their sections
say so). Pure: the installation is read at the edge (installed.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nim_specdec.config import variables as var
from nim_specdec.config.jsonvalue import loads
from nim_specdec.engines.protocol.engine import CommandRequest, EngineCommand, Installation, MergedSpec
from nim_specdec.engines.protocol.sections import (
    CompileCachePlan,
    CpuPreloadPlan,
    EnginePlan,
    ModelRunnerPlan,
    ScheduleRow,
)
from nim_specdec.engines.sglang.command import launch_command, server_arguments
from nim_specdec.engines.sglang.engine_args import lower_args
from nim_specdec.engines.sglang.methods import BY_METHOD, DRAFT_CHECKPOINT, K_GAMMA, K_WINDOW, METHODS, same_algorithm
from nim_specdec.engines.sglang.native_args import NativeArgs, NativeOption, read_native_args
from nim_specdec.engines.sglang.options import RELEASE, sglang_options, spelling_of
from nim_specdec.engines.sglang.translation import check_layer, merge_native, translate_config
from nim_specdec.errors import ConfigError

HOST = "0.0.0.0"  # SGLang's own default, 127.0.0.1, is unreachable from outside the container
NOT_USED = "not used by SGLang"


@dataclass
class SglangArgs:
    """The user's arguments from one place, as engines.protocol's EngineArgs: the model and the guide's
    --speculative-config lifted out, every option kept (`native`: as SGLang's parser reads them)."""

    native: NativeArgs
    model: str | None = None
    model_where: str = ""
    spec: dict[str, Any] | None = None
    spec_given: bool = False
    options: list[Any] = field(default_factory=list)


def _spec_value(text: str, where: str) -> dict[str, Any] | None:
    """The guide's --speculative-config as vLLM reads it ("" and "None" mean none), for SGLang to translate."""
    if text in ("", "None"):
        return None
    value = loads(text, where)
    if value is not None and not isinstance(value, dict):
        raise ConfigError(where, f"expected a JSON object, got {type(value).__name__}", 'write it as {"key": value}')
    return value


def _view(options: Sequence[NativeOption]) -> dict[str, Any]:
    """The options as plain values, the last of each winning (as SGLang's parser keeps them)."""
    view: dict[str, Any] = {}
    for option in options:
        first, _, inline = option.tokens[0].partition("=")
        values = [inline] if "=" in option.tokens[0] else list(option.tokens[1:])
        view[option.name] = True if not values else values[0] if len(values) == 1 else values
    return view


def _method(algorithm: str | None, config: Mapping[str, Any] | None) -> str | None:
    """The guide's method the command serves: the config's where its algorithm is served, else the first row's."""
    if algorithm is None:
        return None
    asked = BY_METHOD.get(config.get("method")) if config else None
    if asked is not None and same_algorithm(asked.algorithm, algorithm):
        return asked.method
    return next((row.method for row in METHODS if same_algorithm(row.algorithm, algorithm)), algorithm.lower())


@dataclass(frozen=True)
class SglangEngine:
    installation: Installation
    name: str = "sglang"
    title: str = "SGLang"

    @property
    def exact(self) -> bool:
        return self.installation.version in ("", RELEASE)

    def release(self) -> str:
        return f"SGLang {self.installation.version or RELEASE}"

    def unknown_warning(self) -> str:
        return (
            f"SGLang {self.installation.version} is installed; the launcher writes and checks commands for "
            f"{RELEASE} (its own resolution judges the rest)"
        )

    def refuse_before_start(self) -> None:
        """Nothing: SGLang reads none of its own variables before its arguments (arctic-inference patches vLLM only)."""

    def read_args(self, tokens: Sequence[str], where: str) -> SglangArgs:
        native = read_native_args(tokens, where)
        parsed = SglangArgs(native, options=list(native.options))
        if native.model_path is not None:
            parsed.model, parsed.model_where = native.model_path, f"{where} --model-path"
        if native.vllm_config is not None:
            parsed.spec = _spec_value(native.vllm_config, f"{where} --speculative-config")
            parsed.spec_given = True
        return parsed

    def option_name(self, flag: str) -> str | None:
        option = sglang_options().get(flag)
        if option is None:
            return None
        # The model is the launcher's to set (NIM_MODEL_PATH), under vLLM's name for it.
        return "--model" if option.dest == "model_path" else spelling_of(option.dest)

    def check_spec_layer(self, values: Mapping[str, Any], where: str) -> dict[str, Any]:
        return check_layer(values, where)

    def check_spec(self, merged: MergedSpec) -> tuple[str, ...]:
        translate_config(merged.config)  # refused in one line where SGLang cannot express it
        return ()

    def infer_method(self, model: Any, draft_config: Mapping[str, Any] | None) -> str | None:
        """None: SGLang takes the algorithm as given, and infers none from the draft's name."""
        return None

    def effective_method(self, config: Mapping[str, Any], draft_config: Mapping[str, Any] | None) -> str | None:
        method = config.get("method")
        return method if isinstance(method, str) else None

    def is_custom_method(self, method: Any) -> bool:
        return False

    def needs_model(self, method: Any) -> bool:
        row = BY_METHOD.get(method) if isinstance(method, str) else None
        return row is not None and row.draft == DRAFT_CHECKPOINT

    def is_custom_proposer(self, model: Any) -> bool:
        return False

    def parallel_drafter(self, method: Any) -> bool:
        """DFLASH and DSPARK draft a block in one pass (their K is a window, not steps)."""
        row = BY_METHOD.get(method) if isinstance(method, str) else None
        return row is not None and row.k_form in (K_WINDOW, K_GAMMA)

    def mtp_drafter(self, model_type: Any, architecture: Any, text_model_type: Any) -> str | None:
        """SGLang serves a target's own heads as EAGLE (NEXTN) for the architectures whose models carry them; which
        do is the target's checkpoint's to say, and its own resolution judges."""
        return "EAGLE" if isinstance(architecture, str) and architecture else None

    def schedule_view(self, config: Mapping[str, Any]) -> list[ScheduleRow] | None:
        return None  # a K schedule is refused (translation.check_layer)

    def command(self, request: CommandRequest) -> EngineCommand:
        if request.capture is not None:
            raise ConfigError(
                var.CAPTURE_ENABLE,
                "the payload capture is vLLM's --middleware, which SGLang 0.5's server cannot load",
                f"unset {var.CAPTURE_ENABLE}, or set {var.ENGINE}=vllm",
            )
        pt: NativeArgs = request.pt.native  # type: ignore[attr-defined]
        cli: NativeArgs = request.cli.native  # type: ignore[attr-defined]
        translated = translate_config(request.config) if request.config is not None else None
        native = NativeArgs((*pt.speculative, *cli.speculative), None, None, (*pt.other, *cli.other))
        flags = merge_native(translated, native)
        lower = lower_args(request.lower, request.origin)
        argv = launch_command(
            self.installation.python,
            request.model,
            HOST,
            lower.port,
            lower.served_model_name,
            flags.argv(),
            (*lower.argv, *native.other),
        )
        # What the plan reports is read back from the command itself, as SGLang's parser reads it.
        view = _view(read_native_args(server_arguments(argv), "the command").options)
        view.pop("model_path", None)
        served = view.get("served_model_name")
        algorithm = view.get("speculative_algorithm")
        method = _method(algorithm if isinstance(algorithm, str) else None, request.config)
        platform = self.installation.platform or "cuda"
        return EngineCommand(
            argv=argv,
            view=view,
            served_model_names=(served,) if isinstance(served, str) else (),
            config=request.config,
            method=method,
            model_runner=ModelRunnerPlan("sglang", f"{NOT_USED}: vLLM's V1/V2 model runner", platform, ""),
            compile_cache=CompileCachePlan("", {}, [], f"{NOT_USED}: vLLM's compile cache"),
            cpu_preload=CpuPreloadPlan(None, f"{NOT_USED}: vLLM's CPU build preloads"),
            engine=EnginePlan(
                None, None, "", False, self.installation.device, self.name, self.installation.version or RELEASE
            ),
            env={},
            warnings=(*flags.notes, *lower.notes),
        )
