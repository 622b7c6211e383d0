"""The plan's sections that later steps fill in: the pre-flight checks and what is exec'd (the engine's own check
is engines.protocol.sections.VllmCheckResult).

They are typed here, in the pure core, so that the pre-flight (preflight/) hands back values the plan holds as
they are, and the exec reads nothing assembled beside the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping


def _read_only(value: Any, name: str, mapping: Mapping) -> None:
    """A frozen value's mapping made read-only (a copy behind a proxy): whoever built it cannot change it later."""
    object.__setattr__(value, name, MappingProxyType(dict(mapping)))


@dataclass(frozen=True)
class CheckRecord:
    """One pre-flight check as the plan shows it."""

    name: str  # "<category>.<what>", e.g. "compatibility.hidden_size"
    result: str  # pass, warn, fail or skipped
    message: str  # one line; "" when it passed without remark
    figures: Mapping[str, Any]

    def __post_init__(self) -> None:
        _read_only(self, "figures", self.figures)


@dataclass(frozen=True)
class PreflightSection:
    mode: Mapping[str, str]  # category -> error, warn or off
    checks: tuple[CheckRecord, ...]

    def __post_init__(self) -> None:
        _read_only(self, "mode", self.mode)


@dataclass(frozen=True)
class Launch:
    """What is exec'd: the program and its arguments (unredacted), and the variables set for it on top of the
    environment the launcher inherited. Never printed as it is (the plan's argv is the masked command)."""

    argv: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _read_only(self, "env", self.env)

    def with_env(self, changes: Mapping[str, str]) -> Launch:
        return replace(self, env={**self.env, **changes})
