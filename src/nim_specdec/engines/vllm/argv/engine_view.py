"""The resolved engine arguments as plain values (pure): what the pre-flight checks and people read.

Lower layers (defaults, NIM_* variables, NIM_SPECDEC_ARGS) first, then the options of NIM_PASSTHROUGH_ARGS and
of the command line as vLLM will read them: `--flag=value`, `--flag value`, `--flag v1 v2` and bare switches
(`--no-X` or `--disable-X` read as false, as the release's parser does).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from nim_specdec.config.jsonvalue import loads
from nim_specdec.engines.vllm.argv.user_args import ParsedArgs
from nim_specdec.engines.vllm.release.vllm_schema import DEFAULT, VllmKnowledge, is_negative


def lower_view_of(engine_env: dict, pt: ParsedArgs, cli: ParsedArgs, known: VllmKnowledge = DEFAULT) -> dict[str, Any]:
    return engine_view(engine_env, [*pt.options, *cli.options], known)


def tensor_parallel(view: Mapping[str, Any]) -> int:
    value = view.get("tensor_parallel_size", 1)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 1  # vLLM's own parser reports a bad value


def engine_view(lower: dict, options: Sequence, known: VllmKnowledge = DEFAULT) -> dict[str, Any]:
    """Resolved engine arguments as plain values, for pre-flight checks and for people."""
    view = dict(lower)
    for option in options:
        if option.name == "_positional":
            continue
        values = option.tokens[1:]
        flag = option.tokens[0]
        if "=" in flag:
            view[option.name] = parse_json_scalar(flag.split("=", 1)[1])
        elif not values:
            view[option.name] = not is_negative(flag, known)
        else:
            view[option.name] = parse_json_scalar(values[0]) if len(values) == 1 else list(values)
    return view


def parse_json_scalar(text: str) -> Any:
    """A dotted `--speculative-config.KEY VALUE` value: JSON where it parses, else the raw string."""
    try:
        return loads(text, "")
    except Exception:  # noqa: BLE001 - any non-JSON text is a plain string, as vLLM treats it
        return text
