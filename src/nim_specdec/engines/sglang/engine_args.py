"""The engine arguments below the user's own (the NIM variables' rows, in vLLM's names, and NIM_SPECDEC_ARGS' engine
keys, in SGLang's), written as SGLang 0.5's options: a row SGLang names otherwise renamed, one it lacks dropped with
a note where the user set it, a key SGLang has no option for refused in one line. Pure."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.engines.sglang.options import sglang_options, spelling_of
from nim_specdec.errors import ConfigError

# The variable table's vLLM arguments (config.variables' `vllm` column) -> SGLang's field.
RENAMED = {
    "max_model_len": "context_length",
    "tensor_parallel_size": "tp_size",
    "pipeline_parallel_size": "pp_size",
}
# vLLM's boolean argument -> (SGLang's flag, the vLLM value that sets it): SGLang says "disable" where vLLM says "on".
FLAGS = {"enforce_eager": ("disable_cuda_graph", True), "enable_prefix_caching": ("disable_radix_cache", False)}
NO_COUNTERPART = ("shutdown_timeout",)  # SGLang 0.5's server has no drain time of its own
ADDRESS = ("port", "served_model_name")  # written by command.launch_command


@dataclass(frozen=True)
class LowerArgs:
    port: int
    served_model_name: str | None  # SGLang serves one name
    argv: tuple[str, ...]  # every other argument, as SGLang's options
    notes: tuple[str, ...]  # a name or argument not served, one line each


def _words(field: str, value: Any) -> tuple[str, ...]:
    option = spelling_of(field)
    if value is True:
        return (option,)
    if isinstance(value, list):
        return (option, *(str(v) for v in value))
    return (option, value if isinstance(value, str) else json.dumps(value))


def lower_args(lower: Mapping[str, Any], origin: Mapping[str, str]) -> LowerArgs:
    """`lower`: engines.protocol's CommandRequest.lower, `origin` where each came from."""
    fields = {option.dest for option in sglang_options().values()}
    argv: list[str] = []
    notes: list[str] = []
    names = lower.get("served_model_name")
    names = [names] if isinstance(names, str) else list(names or [])
    if len(names) > 1:
        dropped = ", ".join(repr(n) for n in names[1:])
        notes.append(f"SGLang serves one --served-model-name: {names[0]!r} is served, {dropped} not")
    for key, value in lower.items():
        if key in ADDRESS:
            continue
        if key in NO_COUNTERPART:
            if origin.get(key, "default") != "default":
                notes.append(f"{origin[key]} sets vLLM's {key}, which SGLang 0.5 has no counterpart for: not used")
            continue
        if key in FLAGS:
            flag, when = FLAGS[key]
            argv.extend(_words(flag, True) if value is when else ())
            continue
        field = RENAMED.get(key, key)
        if field not in fields:
            raise ConfigError(
                origin.get(key, key),
                f"SGLang 0.5 has no option {key[:80]!r}",
                "use SGLang's own field names (python -m sglang.launch_server --help), or NIM_ENGINE=vllm",
            )
        if value is not False and value is not None:
            argv.extend(_words(field, value))
    return LowerArgs(int(lower.get("port", 8000)), names[0] if names else None, tuple(argv), tuple(notes))
