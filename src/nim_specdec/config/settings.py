"""The launcher's environment, parsed once from a Mapping into a frozen Settings value.

Pure: the shell passes `os.environ`; tests pass dicts. Every error names the variable, the
bad value (secrets masked) and the accepted values. Each command parses the environment once, at
its edge, and gives each stage its own part of the Settings (launch/stage_inputs.py), never the whole;
nothing below reads the raw environment except the download backends' credentials (Settings.environ,
through the fetch context) and the exec, which hands the process environment on to vLLM.

The NIM_* variables are read by the table (config.table_reader): each row of config.variables names the
field its value lands on, so a new variable is one row. Settings is a composition of typed sections, each made
once from its rows (the speculation asked for, the target, the engine variables, the locations, the download
policy) and handed on as it is. What is derived from several rows (the port's origin, the parsed
NIM_SPECDEC_ARGS), the unread NIM_* names and other tools' variables are read here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from nim_specdec.config import variables as var
from nim_specdec.config.capture_config import CaptureConfig
from nim_specdec.config.download_settings import DownloadSettings, download_settings
from nim_specdec.config.engine_variables import SECTION as ENGINE_VARIABLES
from nim_specdec.config.engine_variables import EngineVariables
from nim_specdec.config.env_values import DEFAULT_CACHE_PATH, parse_bool
from nim_specdec.config.host_env import HostEnv, read_host_env
from nim_specdec.config.locations import Locations
from nim_specdec.config.preflight_modes import PreflightModes
from nim_specdec.config.specdec_args import specdec_args
from nim_specdec.config.speculation_request import SECTION as SPECULATION
from nim_specdec.config.speculation_request import SpeculationRequest
from nim_specdec.config.table_reader import read_rows, section, table_fields
from nim_specdec.config.target_request import SECTION as TARGET
from nim_specdec.config.target_request import TargetRequest
from nim_specdec.config.tuned_for import TunedFor
from nim_specdec.config.variable_check import IgnoredVariable, ignored_variables, strict_problem
from nim_specdec.errors import ConfigError

__all__ = ["DEFAULT_CACHE_PATH", "DEFAULT_PORT", "DEFAULT_SHUTDOWN_TIMEOUT", "LogFormat", "Settings", "parse_settings"]

DEFAULT_PORT = int(var.TABLE[var.SERVER_PORT].default)  # type: ignore[arg-type]
# vLLM's own default (0) aborts every request in flight on SIGTERM; the launcher passes this one unless told.
DEFAULT_SHUTDOWN_TIMEOUT = int(var.TABLE[var.SHUTDOWN_TIMEOUT].default)  # type: ignore[arg-type]


@dataclass(frozen=True)
@table_fields()
class Settings:
    # The fields the rows of config.variables name, typed here: each default is its row's (what an empty
    # environment gives), each value its row's reader's. A row whose field is not written here is a field all
    # the same, typed by its kind.
    cache_trust_shared: bool  # the platform vouches for the cache volume
    disable_download: bool
    builtin_config_dir: str | None  # None: the shipped configs
    log_level: str
    jsonl_logging: bool
    preflight: PreflightModes
    capture: CaptureConfig | None  # NIM_CAPTURE_ENABLE / NIM_CAPTURE_ARGS; None: capture off
    tuned_for: TunedFor | None  # the engine a tune recommendation was measured on
    plan_vllm_version: str | None  # the release `plan` plans for; None: the installed one
    engine: str  # NIM_ENGINE: "vllm" or "sglang", the engine planned for and served with
    # The sections, each parsed once from its rows and handed on as it is (launch/stage_inputs.py).
    speculation: SpeculationRequest = SpeculationRequest()
    target: TargetRequest = TargetRequest()
    engine_variables: EngineVariables = EngineVariables()
    locations: Locations = Locations()
    download: DownloadSettings = DownloadSettings()  # the rows of config.download_variables
    # Read from other tools' variables.
    host: HostEnv = HostEnv()  # other tools' variables the plan depends on (LD_PRELOAD, CUDA_*, secrets)
    ignored: tuple[IgnoredVariable, ...] = ()  # NIM_* variables set but not read (config.variable_check)
    # The process environment as parsed: read only for the download backends' credentials and endpoints
    # (fetch context) and the engine's own variables (its Installation), and handed on by the exec. Never
    # printed: the plan shows host.shown_env.
    environ: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class LogFormat:
    """How the launcher writes its lines (NIM_LOG_LEVEL, NIM_JSONL_LOGGING) and the secret values every line masks:
    text.logs.setup_logging's arguments, given as one value to a step or process that logs as the launcher does."""

    level: str = "INFO"
    jsonl: bool = False
    secrets: tuple[str, ...] = field(default=(), repr=False)


def ignored_or_refused(env: Mapping[str, str]) -> tuple[IgnoredVariable, ...]:
    """The NIM_* variables nim-specdec does not read; with NIM_STRICT_VARIABLES=1 a ConfigError instead. The
    launcher's settings and every lab command pass here, so the switch means the same wherever it is set."""
    strict = parse_bool(env, var.STRICT_VARIABLES)  # read (and refused when malformed) whether or not it matters
    ignored = ignored_variables(env)
    if ignored and strict:
        raise ConfigError(
            var.STRICT_VARIABLES,
            strict_problem(ignored),
            f"remove or rename the variable, or unset {var.STRICT_VARIABLES} to go on with a warning",
        )
    return tuple(ignored)


def parse_settings(env: Mapping[str, str]) -> Settings:
    read = read_rows(env)
    wished = section(read, SPECULATION)
    return Settings(
        **section(read, ""),
        target=TargetRequest(**section(read, TARGET)),
        engine_variables=EngineVariables(
            **section(read, ENGINE_VARIABLES), port_given=bool(env.get(var.SERVER_PORT, "").strip())
        ),
        locations=Locations(**section(read, "locations")),
        download=download_settings(env, read),
        host=read_host_env(env),
        ignored=ignored_or_refused(env),
        # Last: the variable's own errors come after every other variable's, as when the plan parsed it.
        speculation=SpeculationRequest(**wished, specdec=specdec_args(wished["enable"], wished["specdec_args"])),
        environ=dict(env),
    )
