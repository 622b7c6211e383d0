"""Reading and writing vLLM command-line arguments.

The user's arguments are kept untouched and in order; only the speculative-config forms
(`--speculative-config JSON`, `--speculative-config=JSON`, `--speculative-config.KEY VALUE`)
and the model (`--model X` or the leading positional) are lifted out so that they can be merged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nim_specdec.errors import ConfigError
from nim_specdec.config.jsonvalue import kebab, snake
from nim_specdec.config.specargs import parse_json_scalar, parse_spec_value

SPEC_OPTION = "--speculative-config"


@dataclass(frozen=True)
class Option:
    name: str  # snake_case, without a leading "no_" for negated booleans
    tokens: tuple[str, ...]  # the exact tokens as given


@dataclass
class ParsedArgs:
    model: str | None = None
    model_where: str = ""
    spec: dict[str, Any] | None = None  # from a whole --speculative-config value
    spec_dotted: dict[str, Any] = field(default_factory=dict)
    options: list[Option] = field(default_factory=list)

    def names(self) -> set[str]:
        return {o.name for o in self.options}


def _looks_like_value(token: str) -> bool:
    if not token.startswith("-"):
        return True
    try:
        float(token)  # negative numbers are values, not options
        return True
    except ValueError:
        return False


def _option_name(flag: str) -> str:
    name = snake(flag.split("=", 1)[0])
    return name


def split_options(tokens: list[str]) -> tuple[list[str], list[list[str]]]:
    """Leading positionals, then groups of [--option, values...]."""
    positionals: list[str] = []
    groups: list[list[str]] = []
    for token in tokens:
        if token.startswith("-") and not _looks_like_value(token):
            groups.append([token])
        elif groups:
            groups[-1].append(token)
        else:
            positionals.append(token)
    return positionals, groups


def parse_vllm_args(tokens: list[str], where: str) -> ParsedArgs:
    """`where` names the source in errors: "argument" for the command line, or a variable name."""
    parsed = ParsedArgs()
    positionals, groups = split_options(list(tokens))
    if positionals:
        parsed.model, parsed.model_where = positionals[0], f"{where} (positional model)"
        if len(positionals) > 1:
            parsed.options.append(Option("_positional", tuple(positionals[1:])))
    for group in groups:
        flag, values = group[0], group[1:]
        inline = flag.split("=", 1)[1] if "=" in flag else None
        bare = flag.split("=", 1)[0]
        if bare == SPEC_OPTION:
            text = inline if inline is not None else (values[0] if values else "")
            rest = values if inline is not None else values[1:]
            if not text.strip():
                raise ConfigError(f"{where} {SPEC_OPTION}", "has no value", "follow it with a JSON object")
            parsed.spec = parse_spec_value(text, f"{where} {SPEC_OPTION}") or {}
            if rest:
                parsed.options.append(Option("_positional", tuple(rest)))
        elif bare.startswith(SPEC_OPTION + "."):
            key = snake(bare[len(SPEC_OPTION) + 1 :])
            text = inline if inline is not None else (values[0] if values else "true")
            parsed.spec_dotted[key] = parse_json_scalar(text)
            rest = values if inline is not None else values[1:]
            if rest:
                parsed.options.append(Option("_positional", tuple(rest)))
        elif bare == "--model":
            parsed.model = inline if inline is not None else (values[0] if values else None)
            parsed.model_where = f"{where} --model"
            rest = values if inline is not None else values[1:]
            if rest:
                parsed.options.append(Option("_positional", tuple(rest)))
        else:
            name = _option_name(bare)
            if name.startswith("no_"):
                name = name[3:]
            parsed.options.append(Option(name, tuple(group)))
    return parsed


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
        return [flag, *(json.dumps(v) if isinstance(v, (dict, list)) else str(v) for v in value)]
    return [flag, str(value)]
