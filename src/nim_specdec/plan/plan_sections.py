"""The plan's sections that later steps fill in: the pre-flight checks, vLLM's own check, and what is exec'd.

They are typed here, in the pure core, so that the pre-flight (preflight/) and the vLLM check (launch/) hand
back values the plan holds as they are, and the exec reads nothing assembled beside the plan.
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


NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class VllmCheckResult:
    """The installed vLLM's verdict on the command line (engines/vllm/check/gate.py runs it)."""

    ran: bool
    seconds: float = 0.0
    skipped: str | None = None  # why it did not run here, or vLLM's remark when it passed with one
    status: str | None = None  # NOT_CHECKED: vLLM could not judge in this process (no device)
    deferred: str | None = None  # where it runs instead (serve: the server's process, before vLLM starts)
    while_downloading: bool = False  # it judged the command while the weights downloaded

    @property
    def not_checked(self) -> bool:
        return self.status == NOT_CHECKED

    @property
    def settled(self) -> bool:
        """It ran, will run in the server's process, or cannot judge in this process: no other check here."""
        return self.ran or self.deferred is not None or self.not_checked

    @property
    def in_server(self) -> bool:
        """serve execs vllm_boot, which checks before vLLM starts: deferred, or not checked here."""
        return self.deferred is not None or self.not_checked


def settled(check: VllmCheckResult | None) -> bool:
    return check is not None and check.settled


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
