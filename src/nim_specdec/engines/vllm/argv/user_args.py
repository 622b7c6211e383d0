"""The user's vLLM arguments (the command line, NIM_PASSTHROUGH_ARGS): read as vLLM's parser reads them, written back.

The user's arguments are kept untouched and in order; only the speculative-config forms
(`--speculative-config JSON`, `--speculative-config=JSON`, `--speculative-config.KEY VALUE`)
and the model (`--model X` or the leading positional) are lifted out so that they can be merged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from nim_specdec.config.jsonvalue import loads, snake
from nim_specdec.engines.vllm.release.vllm_schema import (
    DEFAULT,
    WHOLE,
    VllmKnowledge,
    normalise_flag,
    option_dest,
    resolve_option,
    speculative_role,
)
from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import is_secret_option

# The option that holds the whole speculative config as JSON (the lab and the vLLM check look for it by this name).
SPEC_OPTION = WHOLE

_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@dataclass
class SpecArgs:
    given: bool = False
    config: dict[str, Any] | None = None


def human_readable_int(text: str) -> Any:
    """ "1k" -> 1000 and "1K" -> 1024, as vLLM's parser reads dotted values; else the string as it is."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text.strip())
    if not match:
        return text
    number, suffix = match.groups()
    if suffix in _DECIMAL:
        return int(float(number) * _DECIMAL[suffix])
    return int(number) * _BINARY[suffix] if number.isdigit() else text


@dataclass(frozen=True)
class Option:
    name: str  # snake_case, without a leading "no_" for negated booleans
    tokens: tuple[str, ...]  # the exact tokens as given


@dataclass
class ParsedArgs:
    model: str | None = None
    model_where: str = ""
    spec: dict[str, Any] | None = None  # the speculative config these arguments give vLLM
    spec_given: bool = False  # a speculative option was given (spec None then means "none", as in vLLM)
    options: list[Option] = field(default_factory=list)

    def names(self) -> set[str]:
        return {o.name for o in self.options}


def looks_like_value(token: str) -> bool:
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


def _is_option(token: str, known: VllmKnowledge) -> bool:
    return token.startswith("-") and not looks_like_value(token)


def _value_of_previous(token: str, group: list[str] | None, known: VllmKnowledge) -> bool:
    """Whether a token starting with '-' is a value of the option before it: one vLLM has no option of
    that name (`-Zq3x...`, a key drawn by secrets.token_urlsafe()), after an option still without its
    value. After a secret option every value is taken whatever it looks like, unless vLLM knows it as an
    option: a key must never become an option name that is printed."""
    if group is None or "=" in group[0] or resolve_option(token.split("=", 1)[0], known) is not None:
        return False
    if is_secret_option(group[0]):
        # `--api-key K1 --K2...`: a name vLLM does not know after a key is a key (then refused as one of
        # several values starting with '-', naming the option), never an option name printed in an error.
        return len(group) == 1 or _takes_list(group[0])
    if _rewritten_option(token, known):
        return False
    return len(group) == 1 and not token.startswith("--")


def _rewritten_option(token: str, known: VllmKnowledge) -> bool:
    """`-O0`, `-O=3`, `-Odecode`, `-cc.mode=0`: spellings vLLM's parser turns into options before argparse
    reads them (vllm/utils/argparse_utils.py), so after a flag such as --enforce-eager they are never its
    value."""
    head = token.split("=", 1)[0]
    return token.startswith("-O") or ("." in head and resolve_option(head.split(".", 1)[0], known) is not None)


def _takes_list(flag: str) -> bool:
    return resolve_option(flag.split("=", 1)[0], DEFAULT) == "--api-key"


def split_options(tokens: list[str], known: VllmKnowledge = DEFAULT) -> tuple[list[str], list[list[str]]]:
    """Leading positionals, then groups of [--option, values...]. A value starting with '-' stays with
    its option, joined to it as `--option=-value` when it is the only one (vLLM's parser reads it so)."""
    positionals: list[str] = []
    groups: list[list[str]] = []
    for token in tokens:
        if _is_option(token, known) and not _value_of_previous(token, groups[-1] if groups else None, known):
            groups.append([token])
        elif groups:
            groups[-1].append(token)
        else:
            positionals.append(token)
    return positionals, [_joined(group) for group in groups]


def _joined(group: list[str]) -> list[str]:
    """`--api-key -K` as vLLM must receive it: `--api-key=-K` (several values, one starting with '-', have
    no spelling vLLM accepts: engine_command.to_cli refuses them, naming the option)."""
    if len(group) == 2 and "=" not in group[0] and not looks_like_value(group[1]):
        return [f"{group[0]}={group[1]}"]
    return group


def _take_value(tokens: list[str], i: int, flag: str, inline: str | None, where: str) -> tuple[str, int]:
    if inline is not None:
        return inline, i + 1
    if i + 1 >= len(tokens):
        raise ConfigError(f"{where} {flag}", "has no value", "follow it with a value")
    return tokens[i + 1], i + 2


def _whole_value(text: str, where: str) -> dict[str, Any] | None:
    """A --speculative-config value as vLLM reads it: "" and "None" mean none, else JSON."""
    if text in ("", "None"):
        return None
    value = loads(text, where)
    if value is not None and not isinstance(value, dict):
        raise ConfigError(
            where, f"expected a JSON object, got {type(value).__name__}", 'write it as {"key": value, ...}'
        )
    return value


def _dotted_value(text: str, append: bool) -> Any:
    """A dotted value as vLLM's parser reads it: `+` splits on commas, then JSON, then 1k-style integers."""
    if append:
        text = json.dumps(text.split(","))
    try:
        return json.loads(text)
    except ValueError:
        return human_readable_int(text)
    except RecursionError:
        raise ConfigError("--speculative-config", "a dotted value is JSON nested too deeply", "flatten it") from None


def _update(original: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():  # vLLM's merge of repeated dotted keys: dicts merge, lists extend
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _update(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] = original[key] + value
        else:
            original[key] = value


def extract_speculative(tokens: list[str], where: str, known: VllmKnowledge = DEFAULT) -> tuple[list[str], SpecArgs]:
    """Lift every speculative spelling vLLM's parser accepts out of `tokens`, folded as vLLM folds them:
    the whole-value options in order, then each dotted group (appended by vLLM's parser after all other
    arguments), the last one winning; then --spec-method/--spec-model/--spec-tokens on top."""
    rest: list[str] = []
    whole: list[dict[str, Any] | None] = []
    groups: dict[str, dict[str, Any]] = {}
    fields: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        flag, eq, inline_text = token.partition("=")
        inline = inline_text if eq else None
        head = flag.split(".", 1)[0]
        role = speculative_role(head, known) if token.startswith("-") and not looks_like_value(token) else None
        if role is None:
            rest.append(token)
            i += 1
            continue
        kind, name = role
        label = f"{where} {flag}"
        if kind == "whole" and "." in flag:
            value_text, i = _take_value(tokens, i, flag, inline, where)
            path = flag.split(".")[1:]
            append = path[-1].endswith("+")
            path[-1] = path[-1].rstrip("+")
            if not all(path):
                raise ConfigError(label, "has an empty key", "write --speculative-config.KEY VALUE")
            nested: Any = _dotted_value(value_text, append)
            for key in reversed(path):
                nested = {key: nested}
            _update(groups.setdefault(normalise_flag(head), {}), nested)
        elif kind == "whole":
            value_text, i = _take_value(tokens, i, flag, inline, where)
            whole.append(_whole_value(value_text, label))
        else:
            value_text, i = _take_value(tokens, i, flag, inline, where)
            fields[name] = _single_value(name, value_text, label, known)
    spec = SpecArgs(given=bool(whole or groups or fields))
    if groups:
        spec.config = list(groups.values())[-1]
    elif whole:
        spec.config = whole[-1]
    for key, value in fields.items():
        if spec.config is not None and snake(key) in {snake(k) for k in spec.config}:
            raise ConfigError(
                f"{where} --speculative-config",
                f"sets {key!r} that a --spec-* option sets too",
                "vLLM refuses both; keep one",
            )
        spec.config = {**(spec.config or {}), key: value}
    return rest, spec


def _single_value(name: str, text: str, where: str, known: VllmKnowledge) -> Any:
    """--spec-tokens is read as a plain integer and --spec-method checked against vLLM's methods."""
    if name == "num_speculative_tokens":
        try:
            return int(text)
        except ValueError:
            raise ConfigError(where, f"invalid value {text!r}", "give an integer such as 3") from None
    if name == "method" and known.exact and text not in known.enum("method"):
        raise ConfigError(
            where,
            f"invalid method {text!r} for vLLM {known.snapshot}",
            f"use one of: {', '.join(known.enum('method')[:12])}, ...",
        )
    return text


def parse_vllm_args(tokens: list[str], where: str, known: VllmKnowledge = DEFAULT) -> ParsedArgs:
    """`where` names the source in errors: "argument" for the command line, or a variable name."""
    parsed = ParsedArgs()
    remaining, spec = extract_speculative(list(tokens), where, known)
    parsed.spec, parsed.spec_given = spec.config, spec.given
    positionals, groups = split_options(remaining, known)
    if positionals:
        parsed.model, parsed.model_where = positionals[0], f"{where} (positional model)"
        if len(positionals) > 1:
            parsed.options.append(Option("_positional", tuple(positionals[1:])))
    for group in groups:
        flag, values = group[0], group[1:]
        if len(values) > 1 and not all(looks_like_value(v) for v in values):
            raise ConfigError(
                f"{where} {flag.split('=', 1)[0]}",
                "has several values and one starts with '-' (vLLM would read it as an option)",
                "give that value alone as --option=VALUE, or replace it",
            )
        inline = flag.split("=", 1)[1] if "=" in flag else None
        bare = flag.split("=", 1)[0]
        if resolve_option(bare, known) == "--model":
            parsed.model = inline if inline is not None else (values[0] if values else None)
            parsed.model_where = f"{where} --model"
            rest = values if inline is not None else values[1:]
            if rest:
                parsed.options.append(Option("_positional", tuple(rest)))
        else:
            name = option_dest(bare, known) or _option_name(bare)
            if name.startswith("no_") and option_dest(bare, known) is None:
                name = name[3:]
            parsed.options.append(Option(name, tuple(group)))
    return parsed
