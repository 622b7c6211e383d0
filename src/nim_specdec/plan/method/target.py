"""Which model is served, from where, under which name, and in which mode.

Precedence: a model given as a vLLM argument > NIM_PASSTHROUGH_ARGS > NIM_MODEL_PATH
(model-free mode) > NIM_MODEL_NAME (model-specific mode, a built-in entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from nim_specdec.config import variables as var
from nim_specdec.config.sources import SourceRef, parse_source
from nim_specdec.errors import ConfigError
from nim_specdec.plan.method.builtin import BuiltinEntry, find, require

TARGET_LINK = "target"  # workspace subdirectory a downloaded target is linked to
MODEL_SPECIFIC = "model-specific"
MODEL_FREE = "model-free"


@dataclass(frozen=True)
class Target:
    mode: str
    where: str  # the variable or argument that chose the model
    source: SourceRef | None  # None: a hub id that vLLM resolves itself
    model_arg: str  # as given; see vllm_model() for what vLLM receives
    builtin: BuiltinEntry | None  # the built-in entry whose config applies (model-specific mode)
    registered: BuiltinEntry | None  # a built-in entry matching the model, used by the model-free auto choice

    def lookup_names(self) -> list[str]:
        names = [self.model_arg]
        if self.source is not None:
            names += [self.source.location, self.source.location.rstrip("/").rsplit("/", 1)[-1]]
        return names


def _from_argument(value: str, where: str, registry: Sequence[BuiltinEntry]) -> Target:
    if "://" in value or value.startswith("/"):
        source = parse_source(value, where)
        return Target(MODEL_FREE, where, source, source.uri, None, None)
    return Target(MODEL_FREE, where, None, value, None, find(registry, [value]))


def resolve_target(
    cli_model: tuple[str, str] | None,
    passthrough_model: tuple[str, str] | None,
    model_source: SourceRef | None,
    model_name: str | None,
    registry: Sequence[BuiltinEntry],
) -> Target:
    """`model_source`, `model_name`: NIM_MODEL_PATH and NIM_MODEL_NAME as the settings read them."""
    for given in (cli_model, passthrough_model):
        if given is not None:
            value, where = given
            if not value:
                raise ConfigError(where, "is empty", "give a model directory or hub id")
            target = _from_argument(value, where, registry)
            return _with_registered(target, registry)
    if model_source is not None:
        src = model_source
        return _with_registered(Target(MODEL_FREE, var.MODEL_PATH, src, src.uri, None, None), registry)
    if model_name is not None:
        entry = require(tuple(registry), model_name)
        source = parse_source(entry.source, f"built-in config {entry.file} source")
        return Target(MODEL_SPECIFIC, var.MODEL_NAME, source, source.uri, entry, entry)
    known = ", ".join(sorted(e.model_id for e in registry)) or "none"
    raise ConfigError(
        var.MODEL_PATH,
        "no model to serve: neither NIM_MODEL_PATH, NIM_MODEL_NAME nor a vLLM --model argument is set",
        f"set NIM_MODEL_PATH to a directory or URI, or NIM_MODEL_NAME to a built-in model ({known})",
    )


def unused_model_variables(target: Target, model_source: SourceRef | None, model_name: str | None) -> list[str]:
    """One warning per model variable set but not serving, naming the one that serves: the precedence above
    applies with a word, not silently (NIM_MODEL_NAME beside NIM_MODEL_PATH is the common case)."""
    given = [(var.MODEL_PATH, model_source is not None), (var.MODEL_NAME, model_name is not None)]
    return [
        f"{name} is ignored: {target.where} chooses the model served ({target.model_arg}); the precedence is "
        f"--model > {var.PASSTHROUGH_ARGS} > {var.MODEL_PATH} > {var.MODEL_NAME}; unset {name} to silence this"
        for name, is_set in given
        if is_set and name != target.where
    ]


def _with_registered(target: Target, registry: Sequence[BuiltinEntry]) -> Target:
    if target.registered is not None:
        return target
    entry = find(registry, target.lookup_names())
    return Target(target.mode, target.where, target.source, target.model_arg, target.builtin, entry)


def vllm_model(target: Target, workspace: str) -> str:
    """What vLLM is given: a local directory as it is; a remote source through its workspace link."""
    if target.source is None:
        return target.model_arg
    if target.source.is_local:
        return target.source.location
    return f"{workspace}/{TARGET_LINK}"


def served_names(target: Target, served_model_name: str | None) -> list[str]:
    """The names clients use, the first the primary one; [] leaves vLLM's default (the model argument).
    NIM_SERVED_MODEL_NAME wins; a built-in model answers to its NIM name and its repository id."""
    if served_model_name:
        return [served_model_name]
    if target.builtin is not None:
        return target.builtin.served_names()
    if target.source is not None and not target.source.is_local:
        return [target.source.location]
    return []
