"""What the final vLLM command carries, read back from it with the parser that reads the user's arguments.

The plan reports the served model names and the speculative config from here, so what it says and what vLLM
is given cannot drift apart: there is one reading of each value, the command's. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nim_specdec.config import variables as var
from nim_specdec.engines.vllm.argv.engine_view import engine_view
from nim_specdec.engines.vllm.argv.user_args import parse_vllm_args
from nim_specdec.engines.vllm.release.vllm_schema import VllmKnowledge


@dataclass(frozen=True)
class Carried:
    served_model_names: tuple[str, ...]  # () where the command leaves vLLM's default (the model argument)
    spec: dict[str, Any] | None  # the --speculative-config the command gives, None for none
    view: Mapping[str, Any]  # every engine argument as vLLM will read it


def read_command(argv: Sequence[str], program_length: int, known: VllmKnowledge) -> Carried:
    """`argv` past its first `program_length` tokens (the program and the model), as vLLM will read it."""
    parsed = parse_vllm_args(list(argv[program_length:]), "the planned command", known)
    view = engine_view({}, parsed.options, known)
    names = view.get("served_model_name")
    listed = names if isinstance(names, list) else [] if names is None else [names]
    return Carried(tuple(str(name) for name in listed), parsed.spec, view)


def served_name_warning(variable_value: str | None, carried: tuple[str, ...], set_by: str) -> str | None:
    """NIM_SERVED_MODEL_NAME set and a higher source (the command line, NIM_PASSTHROUGH_ARGS or
    NIM_SPECDEC_ARGS) giving other names: the command line wins, as everywhere, and the user is told."""
    if not variable_value or carried == (variable_value,) or set_by == var.SERVED_MODEL_NAME:
        return None
    shown = ", ".join(repr(name) for name in carried) or "vLLM's default (the model argument)"
    return (
        f"{var.SERVED_MODEL_NAME}={variable_value!r} is overridden by --served-model-name from "
        f"{'the command line' if set_by == 'cli' else set_by}: vLLM serves the model as {shown}"
    )
