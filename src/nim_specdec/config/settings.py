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
from typing import Mapping

from nim_specdec.common.logs import LOG_LEVELS
from nim_specdec.config.capture_config import CaptureConfig, parse_capture
from nim_specdec.config.download_settings import DownloadSettings, download_settings
from nim_specdec.config.env_values import DEFAULT_CACHE_PATH, parse_bool
from nim_specdec.config.host_env import HostEnv, read_host_env
from nim_specdec.config.preflight_modes import DEFAULT_MODES, PreflightModes, parse_preflight_modes
from nim_specdec.config.model_runner import ENV as USE_V2_ENV, parse_use_v2_env
from nim_specdec.config.tuned_for import ENV as TUNED_FOR_ENV, TunedFor, parse_tuned_for
from nim_specdec.errors import ConfigError
from nim_specdec.config.sources import SourceRef, parse_source, path_problem
from nim_specdec.common.redact import preview

__all__ = ["DEFAULT_CACHE_PATH", "DEFAULT_PORT", "DEFAULT_SHUTDOWN_TIMEOUT", "Settings", "parse_settings"]

DEFAULT_PORT = 8000
# vLLM's own default (0) aborts every request in flight on SIGTERM. 60 s of draining fits the manifests'
# terminationGracePeriodSeconds (120) after their preStop pause (10 s), with time left for the teardown.
DEFAULT_SHUTDOWN_TIMEOUT = 60


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
    shutdown_timeout: int | None = None  # NIM_SHUTDOWN_TIMEOUT; None: unset, DEFAULT_SHUTDOWN_TIMEOUT applies
    cache_path: str = DEFAULT_CACHE_PATH
    workspace: str = DEFAULT_CACHE_PATH + "/workspace"
    log_level: str = "INFO"
    jsonl_logging: bool = False
    passthrough_args: tuple[str, ...] = ()
    disable_download: bool = False
    builtin_config_dir: str | None = None  # NIM_BUILTIN_CONFIG_DIR; None: the shipped configs
    download: DownloadSettings = DownloadSettings()  # NIM_DOWNLOAD_*, NIM_CACHE_LOCK_TIMEOUT, NIM_S3_*, ...
    use_v2_model_runner: bool | None = None  # VLLM_USE_V2_MODEL_RUNNER as vLLM reads it; None when unset
    tuned_for: TunedFor | None = None  # NIM_TUNED_FOR: the engine a tune recommendation was measured on
    capture: CaptureConfig | None = None  # NIM_CAPTURE_ENABLE / NIM_CAPTURE_ARGS; None: capture off
    preflight: PreflightModes = DEFAULT_MODES  # NIM_SPECDEC_PREFLIGHT
    host: HostEnv = HostEnv()  # other tools' variables the plan depends on (LD_PRELOAD, CUDA_*, secrets)
    # The process environment as parsed: read only for the download backends' credentials and endpoints
    # (fetch context) and handed on by the exec. Never printed: the plan shows host.shown_env.
    environ: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)


def _int(env: Mapping[str, str], name: str, lo: int, hi: int, default: int | None) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise ConfigError(
            name, f"invalid value {raw!r} is not an integer", f"use an integer from {lo} to {hi}"
        ) from None
    if not lo <= value <= hi:
        raise ConfigError(name, f"value {value} is out of range", f"use an integer from {lo} to {hi}")
    return value


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


def _choice(
    env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str | None, upper: bool
) -> str | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    value = raw.upper() if upper else raw.lower()
    if value not in choices:
        raise ConfigError(name, f"invalid value {raw!r}", f"use one of: {', '.join(choices)}")
    return value


def _passthrough(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("NIM_PASSTHROUGH_ARGS", "")
    try:
        return tuple(shlex.split(raw))
    except ValueError as err:
        raise ConfigError(
            "NIM_PASSTHROUGH_ARGS", f"cannot split into arguments ({err})", "balance the quotes"
        ) from None


def _source(env: Mapping[str, str], name: str) -> SourceRef | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    return parse_source(raw, name)


def parse_settings(env: Mapping[str, str]) -> Settings:
    cache_path = _abs_dir(env, "NIM_CACHE_PATH", DEFAULT_CACHE_PATH)
    return Settings(
        enable=parse_bool(env, "NIM_SPECDEC_ENABLE"),
        specdec_args=env.get("NIM_SPECDEC_ARGS") if (env.get("NIM_SPECDEC_ARGS") or "").strip() else None,
        draft_source=_source(env, "NIM_DRAFT_MODEL_PATH"),
        model_name=_text(env, "NIM_MODEL_NAME"),
        model_source=_source(env, "NIM_MODEL_PATH"),
        served_model_name=_text(env, "NIM_SERVED_MODEL_NAME"),
        max_model_len=_int(env, "NIM_MAX_MODEL_LEN", 1, 2**31 - 1, None),
        port=_int(env, "NIM_SERVER_PORT", 1, 65535, DEFAULT_PORT) or DEFAULT_PORT,
        shutdown_timeout=_int(env, "NIM_SHUTDOWN_TIMEOUT", 0, 86400, None),
        cache_path=cache_path,
        workspace=_abs_dir(env, "NIM_WORKSPACE", cache_path + "/workspace"),
        log_level=_choice(env, "NIM_LOG_LEVEL", LOG_LEVELS, "INFO", upper=True) or "INFO",
        jsonl_logging=parse_bool(env, "NIM_JSONL_LOGGING"),
        passthrough_args=_passthrough(env),
        disable_download=parse_bool(env, "NIM_DISABLE_MODEL_DOWNLOAD"),
        builtin_config_dir=_text(env, "NIM_BUILTIN_CONFIG_DIR"),
        download=download_settings(env),
        use_v2_model_runner=parse_use_v2_env(env.get(USE_V2_ENV)),
        tuned_for=parse_tuned_for(env.get(TUNED_FOR_ENV)),
        capture=parse_capture(env, cache_path),
        preflight=parse_preflight_modes(env),
        host=read_host_env(env),
        environ=dict(env),
    )
