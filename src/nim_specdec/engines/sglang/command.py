"""The SGLang command the launcher execs: `python -m sglang.launch_server` with the model, the address, the served
names, the speculative flags and the user's other arguments passed through. Pure."""

from __future__ import annotations

from typing import Sequence

MODULE = "sglang.launch_server"


def launch_command(
    python: str,
    model_path: str,
    host: str,
    port: int,
    served_model_name: str | None,
    speculative: Sequence[str],
    other: Sequence[str],
) -> tuple[str, ...]:
    """The argv: `python` is SGLang's interpreter (installed.serve_python), `speculative` the flags of
    translation.SpeculativeFlags.argv(), `other` NativeArgs.other. SGLang serves one name (--served-model-name)."""
    names = ("--served-model-name", served_model_name) if served_model_name else ()
    return (
        python,
        "-m",
        MODULE,
        "--model-path",
        model_path,
        "--host",
        host,
        "--port",
        str(port),
        *names,
        *speculative,
        *other,
    )


def server_arguments(command: Sequence[str]) -> tuple[str, ...]:
    """What SGLang's parser reads of a launch command: everything after `-m sglang.launch_server`."""
    return tuple(command[3:]) if tuple(command[1:3]) == ("-m", MODULE) else tuple(command)
