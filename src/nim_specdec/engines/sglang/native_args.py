"""The user's SGLang arguments (the command line, NIM_PASSTHROUGH_ARGS) read as SGLang's parser reads them: each
option found in the release's option snapshot, a unique prefix taken for the option it abbreviates (argparse's
rule), `--opt=value` and `--opt value` alike. Split into SGLang's own speculative arguments, the model path, the
guide's vLLM-form `--speculative-config`, and the rest, passed through as written. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from nim_specdec.engines.sglang.options import Option, sglang_options
from nim_specdec.errors import ConfigError

VLLM_SPEC_OPTION = "--speculative-config"  # the guide's vLLM form; SGLang has no such option


@dataclass(frozen=True)
class NativeOption:
    """One option as the user gave it: the field it sets and its words (engines.protocol's EngineOption)."""

    name: str  # the field, snake_case: speculative_num_steps
    tokens: tuple[str, ...]  # as written: ("--speculative-num-steps", "3") or ("--speculative-num-steps=3",)


@dataclass(frozen=True)
class NativeArgs:
    speculative: tuple[
        tuple[str, str | None], ...
    ]  # (field, value) of SGLang's --speculative-*, in order; None: a flag
    model_path: str | None  # --model-path / --model
    vllm_config: str | None  # the JSON text of --speculative-config (the guide's vLLM form)
    other: tuple[str, ...]  # every other argument, as written
    options: tuple[NativeOption, ...] = ()  # every option given but --speculative-config, in order

    def speculative_fields(self) -> dict[str, str | None]:
        """The speculative fields given, the last of each winning, as SGLang's parser does."""
        return dict(self.speculative)


def is_speculative(dest: str) -> bool:
    return dest.startswith("speculative_")


def _option(word: str, options: Mapping[str, Option], where: str) -> Option:
    if word in options:
        return options[word]
    # argparse takes an unambiguous prefix of a long option for that option.
    matches = sorted(
        {o.dest: o for s, o in options.items() if s.startswith(word) and s.startswith("--")}.values(),
        key=lambda o: o.spelling,
    )
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join(sorted(s for s, o in options.items() if s.startswith(word))[:4])
        raise ConfigError(
            where, f"ambiguous SGLang option {word[:200]!r} (could be {names})", "spell the option in full"
        )
    raise ConfigError(
        where,
        f"SGLang has no option {word[:200]!r}",
        "check the spelling against `python -m sglang.launch_server --help`",
    )


def read_native_args(argv: Sequence[str], where: str = "arguments", release: str | None = None) -> NativeArgs:
    """`argv` read as SGLang's server parser reads it; an unknown or ambiguous option, or one missing its value,
    refused in one line naming it."""
    options = sglang_options(release) if release else sglang_options()
    speculative: list[tuple[str, str | None]] = []
    model_path: str | None = None
    vllm_config: str | None = None
    other: list[str] = []
    given: list[NativeOption] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") or word == "-":
            raise ConfigError(
                where,
                f"unexpected argument {word[:200]!r}: SGLang's server takes options only",
                "write it as --option value",
            )
        name, eq, inline = word.partition("=")
        if name == VLLM_SPEC_OPTION:
            if eq:
                vllm_config, i = inline, i + 1
            elif i + 1 < len(argv):
                vllm_config, i = argv[i + 1], i + 2
            else:
                raise ConfigError(where, f"{VLLM_SPEC_OPTION} has no value", "give it a JSON object")
            continue
        option = _option(name, options, where)
        if not option.takes_value:
            if eq:
                raise ConfigError(
                    where, f"{option.spelling} takes no value (got {inline[:200]!r})", f"write {option.spelling} alone"
                )
            values: list[str] = []
            i += 1
        elif eq:
            values, i = [inline], i + 1
        elif option.many:
            j = i + 1
            while j < len(argv) and not argv[j].startswith("-"):
                j += 1
            values, i = list(argv[i + 1 : j]), j
        elif i + 1 < len(argv):
            values, i = [argv[i + 1]], i + 2
        else:
            raise ConfigError(where, f"{option.spelling} has no value", f"give {option.spelling} a value")
        given.append(NativeOption(option.dest, (word,) if eq else (word, *values)))
        if option.dest == "model_path":
            model_path = values[0]
        elif is_speculative(option.dest):
            speculative.append((option.dest, values[0] if values else None))
        else:
            other.extend([word] if eq else [word, *values])
    return NativeArgs(tuple(speculative), model_path, vllm_config, tuple(other), tuple(given))
