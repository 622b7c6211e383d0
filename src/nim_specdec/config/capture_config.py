"""NIM_CAPTURE_ENABLE / NIM_CAPTURE_ARGS: parsing into a CaptureConfig. The variables are parsed here,
with every other variable of the settings table; the rest of capture lives in `nim_specdec/capture/`.

Pure: takes the environment as a mapping and returns plain data. What the launcher does with it (the vLLM
arguments that install the middleware, the check that the file can be written) is `capture/launcher.py`; the
middleware that records requests reads the same two variables again inside the vLLM API server process
(which inherits the launcher's environment).

    NIM_CAPTURE_ENABLE   1/true/yes/on or 0/false/no/off (case-insensitive; unset or empty = off)
    NIM_CAPTURE_ARGS     a JSON object with the keys below, all optional
        path              the JSONL file, absolute (default <NIM_CACHE_PATH>/captures/payloads.jsonl)
        format            "mooncake_payload" (default) or "raw_payload"
        endpoint_pattern  an RE2 expression searched in the request path (linear time; no look-around)
                          (default ^/v1/chat/completions$)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from nim_specdec.config import variables as var
from nim_specdec.config.env_values import DEFAULT_CACHE_PATH, parse_bool
from nim_specdec.config.jsonvalue import loads
from nim_specdec.errors import ConfigError
from nim_specdec.text.linear_regex import PatternError, compile_linear
from nim_specdec.text.redact import preview

# The capture file's line formats (their encoders are capture/formats.py, which a test keeps in step).
FORMATS = ("mooncake_payload", "raw_payload")

ENABLE_VAR = var.CAPTURE_ENABLE
ARGS_VAR = var.CAPTURE_ARGS
CACHE_VAR = var.CACHE_PATH
DEFAULT_FILE = "captures/payloads.jsonl"
DEFAULT_FORMAT = "mooncake_payload"
DEFAULT_ENDPOINT_PATTERN = r"^/v1/chat/completions$"

_KEYS = ("path", "format", "endpoint_pattern")


@dataclass(frozen=True)
class CaptureConfig:
    path: str
    format: str = DEFAULT_FORMAT
    endpoint_pattern: str = DEFAULT_ENDPOINT_PATTERN


def default_path(env: Mapping[str, str], cache_path: str | None = None) -> str:
    """<NIM_CACHE_PATH>/captures/payloads.jsonl; `cache_path`: the launcher's parsed NIM_CACHE_PATH."""
    cache = cache_path or (env.get(CACHE_VAR) or "").strip() or DEFAULT_CACHE_PATH
    return f"{cache.rstrip('/')}/{DEFAULT_FILE}"


def _load_args(text: str) -> dict:
    if not text.strip():
        return {}
    try:
        args = loads(text, ARGS_VAR)  # strict: no NaN, no duplicate key, bounded nesting and integers
    except ConfigError as err:
        raise ConfigError(
            ARGS_VAR, f"is not valid JSON: {err.problem}", 'write a JSON object such as {"format": "raw_payload"}'
        ) from None
    if not isinstance(args, dict):
        raise ConfigError(
            ARGS_VAR,
            f"must be a JSON object, got {type(args).__name__}",
            'write a JSON object such as {"format": "raw_payload"}',
        )
    return args


def _string(args: dict, key: str, default: str) -> str:
    value = args.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{ARGS_VAR}.{key}", f"must be a non-empty string, got {value!r}")
    return value


def _usable_path(path: str) -> bool:
    try:
        encoded = os.fsencode(path)
    except UnicodeError:
        return False
    return b"\x00" not in encoded and len(encoded) <= 4096


def parse_capture(env: Mapping[str, str], cache_path: str | None = None) -> CaptureConfig | None:
    """The capture configuration, or None when capture is off. Raises ConfigError on bad values.
    The launcher calls it once, from config.settings (with its parsed cache path); the middleware inside
    the server process calls it again on the environment it inherited."""
    if not parse_bool(env, ENABLE_VAR):
        return None
    args = _load_args(env.get(ARGS_VAR) or "")
    unknown = sorted(set(args) - set(_KEYS))
    if unknown:
        raise ConfigError(
            ARGS_VAR, f"unknown key(s) {', '.join(map(repr, unknown))}", f"allowed keys: {', '.join(_KEYS)}"
        )
    fmt = _string(args, "format", DEFAULT_FORMAT)
    if fmt not in FORMATS:
        raise ConfigError(f"{ARGS_VAR}.format", f"unknown format {fmt!r}", f"use one of: {', '.join(sorted(FORMATS))}")
    pattern = _string(args, "endpoint_pattern", DEFAULT_ENDPOINT_PATTERN)
    try:
        compile_linear(pattern)
    except PatternError as err:
        raise ConfigError(
            f"{ARGS_VAR}.endpoint_pattern",
            f"{preview(pattern)!r} is not a valid regular expression for RE2 ({err})",
            "use an RE2 expression (no back-references or look-around) such as ^/v1/chat/completions$",
        ) from None
    path = _string(args, "path", default_path(env, cache_path))
    if not _usable_path(path):
        raise ConfigError(
            f"{ARGS_VAR}.path",
            f"{preview(path)!r} is not a usable file path (NUL or over 4096 bytes)",
            "use an absolute file path such as /opt/nim/.cache/captures/payloads.jsonl",
        )
    if not path.startswith("/"):
        # The server may run from another working directory than the one the value was written for.
        raise ConfigError(f"{ARGS_VAR}.path", f"relative path {path!r} is not allowed", "use an absolute file path")
    return CaptureConfig(path=path, format=fmt, endpoint_pattern=pattern)
