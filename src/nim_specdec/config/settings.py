"""The launcher's environment, parsed once from a Mapping into a frozen Settings value.

Pure: the shell passes `os.environ`; tests pass dicts. Every error names the variable, the
bad value (secrets masked) and the accepted values. Each command parses the environment once, at
its edge, and passes the Settings (or the part a step needs) down; nothing below reads the raw
environment except the download backends' credentials (Settings.environ, through the fetch
context) and the exec, which hands the process environment on to vLLM.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping

from nim_specdec.text.redact import preview
from nim_specdec.config import variables as var
from nim_specdec.config.capture_config import CaptureConfig, parse_capture
from nim_specdec.config.download_settings import DownloadSettings, download_settings
from nim_specdec.config.env_values import DEFAULT_CACHE_PATH, parse_bool, read_choice, read_int
from nim_specdec.config.host_env import USE_V2_ENV, HostEnv, parse_use_v2_env, read_host_env
from nim_specdec.config.preflight_modes import DEFAULT_MODES, PreflightModes, parse_preflight_modes
from nim_specdec.config.sources import SourceRef, parse_source, path_problem
from nim_specdec.config.tuned_for import ENV as TUNED_FOR_ENV, TunedFor, parse_tuned_for
from nim_specdec.config.variable_check import IgnoredVariable, ignored_variables, strict_problem
from nim_specdec.errors import ConfigError

__all__ = ["DEFAULT_CACHE_PATH", "DEFAULT_PORT", "DEFAULT_SHUTDOWN_TIMEOUT", "Settings", "parse_settings"]

DEFAULT_PORT = int(var.TABLE[var.SERVER_PORT].default)  # type: ignore[arg-type]
# NIM variables that set one vLLM argument each, apart from the served name (built-in names) and the port (always
# given): (variable, argument, value) for those set, in declaration order.
# vLLM's own default (0) aborts every request in flight on SIGTERM; the launcher passes this one unless told.
DEFAULT_SHUTDOWN_TIMEOUT = int(var.TABLE[var.SHUTDOWN_TIMEOUT].default)  # type: ignore[arg-type]
_ENGINE_VARIABLES = tuple(v.name for v in var.vllm_mapped() if v.name not in (var.SERVED_MODEL_NAME, var.SERVER_PORT))


@dataclass(frozen=True)
class Settings:
    enable: bool = False
    specdec_args: str | None = None  # raw JSON; parsed by specargs only when enable is on
    draft_source: SourceRef | None = None
    model_name: str | None = None
    model_source: SourceRef | None = None
    served_model_name: str | None = None
    max_model_len: int | None = None
    port: int = DEFAULT_PORT
    port_given: bool = False  # NIM_SERVER_PORT set (the plan names it as the port's origin)
    engine_variables: tuple[tuple[str, str, Any], ...] = ()  # (NIM variable, vLLM argument, value), those set
    cache_path: str = DEFAULT_CACHE_PATH
    workspace: str = DEFAULT_CACHE_PATH + "/workspace"
    log_level: str = str(var.TABLE[var.LOG_LEVEL].default)
    jsonl_logging: bool = False
    passthrough_args: tuple[str, ...] = ()
    disable_download: bool = False
    cache_trust_shared: bool = False  # NIM_CACHE_TRUST_SHARED: the platform vouches for the cache volume
    builtin_config_dir: str | None = None  # NIM_BUILTIN_CONFIG_DIR; None: the shipped configs
    download: DownloadSettings = DownloadSettings()  # NIM_DOWNLOAD_*, NIM_CACHE_LOCK_TIMEOUT, NIM_S3_*, ...
    use_v2_model_runner: bool | None = None  # VLLM_USE_V2_MODEL_RUNNER as vLLM reads it; None when unset
    tuned_for: TunedFor | None = None  # NIM_TUNED_FOR: the engine a tune recommendation was measured on
    plan_vllm_version: str | None = None  # NIM_PLAN_VLLM_VERSION: the release `plan` plans for; None: installed
    capture: CaptureConfig | None = None  # NIM_CAPTURE_ENABLE / NIM_CAPTURE_ARGS; None: capture off
    preflight: PreflightModes = DEFAULT_MODES  # NIM_SPECDEC_PREFLIGHT
    host: HostEnv = HostEnv()  # other tools' variables the plan depends on (LD_PRELOAD, CUDA_*, secrets)
    ignored: tuple[IgnoredVariable, ...] = ()  # NIM_* variables set but not read (config.variable_check)
    # The process environment as parsed: read only for the download backends' credentials and endpoints
    # (fetch context) and handed on by the exec. Never printed: the plan shows host.shown_env.
    environ: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)


def _text(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _abs_dir(env: Mapping[str, str], name: str, default: str) -> str:
    value = env.get(name, "").strip() or default
    if not value.startswith("/"):
        raise ConfigError(name, f"relative path {value[:200]!r} is not allowed", "use an absolute directory")
    problem = path_problem(value)
    if problem:
        raise ConfigError(name, f"path {preview(value)!r} {problem}", "use a shorter absolute directory")
    return value.rstrip("/") or "/"


def _passthrough(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get(var.PASSTHROUGH_ARGS, "")
    try:
        return tuple(shlex.split(raw))
    except ValueError as err:
        raise ConfigError(var.PASSTHROUGH_ARGS, f"cannot split into arguments ({err})", "balance the quotes") from None


def _source(env: Mapping[str, str], name: str) -> SourceRef | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    return parse_source(raw, name)


def _engine_variables(env: Mapping[str, str]) -> tuple[tuple[str, str, Any], ...]:
    found = []
    for name in _ENGINE_VARIABLES:
        decl = var.TABLE[name]
        if not env.get(name, "").strip():
            continue  # unset or empty: vLLM's default (or a higher layer's) applies
        value = read_int(env, name) if decl.kind == "int" else parse_bool(env, name)
        found.append((name, str(decl.vllm), value))
    return tuple(found)


def _release(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    if not value:
        return None
    parts = value.split(".")
    if len(value) > 20 or len(parts) != 3 or not all(p.isdigit() and p.isascii() for p in parts):
        raise ConfigError(name, f"invalid value {preview(value)!r}: not a release X.Y.Z", "use e.g. 0.34.0 or unset it")
    return value


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
    cache_path = _abs_dir(env, var.CACHE_PATH, DEFAULT_CACHE_PATH)
    engine = _engine_variables(env)
    return Settings(
        enable=bool(parse_bool(env, var.SPECDEC_ENABLE)),
        specdec_args=env.get(var.SPECDEC_ARGS) if (env.get(var.SPECDEC_ARGS) or "").strip() else None,
        draft_source=_source(env, var.DRAFT_MODEL_PATH),
        model_name=_text(env, var.MODEL_NAME),
        model_source=_source(env, var.MODEL_PATH),
        served_model_name=_text(env, var.SERVED_MODEL_NAME),
        max_model_len=next((value for name, _, value in engine if name == var.MAX_MODEL_LEN), None),
        port=read_int(env, var.SERVER_PORT) or DEFAULT_PORT,
        port_given=bool(env.get(var.SERVER_PORT, "").strip()),
        engine_variables=tuple(item for item in engine if item[0] != var.MAX_MODEL_LEN),
        cache_path=cache_path,
        workspace=_abs_dir(env, var.WORKSPACE, cache_path + "/workspace"),
        log_level=read_choice(env, var.LOG_LEVEL, upper=True) or "INFO",
        jsonl_logging=bool(parse_bool(env, var.JSONL_LOGGING)),
        passthrough_args=_passthrough(env),
        disable_download=bool(parse_bool(env, var.DISABLE_MODEL_DOWNLOAD)),
        cache_trust_shared=bool(parse_bool(env, var.CACHE_TRUST_SHARED)),
        builtin_config_dir=_text(env, var.BUILTIN_CONFIG_DIR),
        download=download_settings(env),
        use_v2_model_runner=parse_use_v2_env(env.get(USE_V2_ENV)),
        tuned_for=parse_tuned_for(env.get(TUNED_FOR_ENV)),
        plan_vllm_version=_release(env, var.PLAN_VLLM_VERSION),
        capture=parse_capture(env, cache_path),
        preflight=parse_preflight_modes(env),
        host=read_host_env(env),
        ignored=ignored_or_refused(env),
        environ=dict(env),
    )
