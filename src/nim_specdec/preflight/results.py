"""A check's outcome, the modes that decide what a failure does, and the plan section.

A check only states facts: pass, warn, fail or skipped, with a one-line message and its
figures. Whether a failure stops the launch is decided afterwards from the mode of its
category, so the same checks serve `plan` (report everything) and `serve` (stop on error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from nim_specdec.errors import ConfigError

PASS, WARN, FAIL, SKIPPED = "pass", "warn", "fail", "skipped"
COMPATIBILITY, MEMORY = "compatibility", "memory"
MODES = ("error", "warn", "off")
ENV_VAR = "NIM_SPECDEC_PREFLIGHT"
# Why these defaults: an incompatible draft never works (vLLM fails after minutes of loading,
# or worse, serves with acceptance 1.0), so stopping costs nothing. A memory estimate is an
# estimate: vLLM's own profiling decides in the end, so a tight fit is reported, not refused.
DEFAULT_MODES = {COMPATIBILITY: "error", MEMORY: "warn"}


@dataclass(frozen=True)
class Check:
    name: str  # "<category>.<what>", e.g. "compatibility.hidden_size"
    result: str
    problem: str = ""
    fix: str = ""
    where: str = ""
    figures: Mapping[str, Any] = field(default_factory=dict)

    @property
    def category(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def message(self) -> str:
        return ConfigError(self.where, self.problem, self.fix).one_line() if self.problem else ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "result": self.result, "message": self.message, "figures": dict(self.figures)}


def passed(name: str, message: str = "", **figures: Any) -> Check:
    return Check(name, PASS, message, figures=figures)


def skipped(name: str, reason: str, **figures: Any) -> Check:
    return Check(name, SKIPPED, reason, figures=figures)


def parse_modes(env: Mapping[str, str]) -> dict[str, str]:
    """NIM_SPECDEC_PREFLIGHT sets every category at once; unset keeps the per-category defaults."""
    raw = env.get(ENV_VAR, "").strip().lower()
    if not raw:
        return dict(DEFAULT_MODES)
    if raw not in MODES:
        raise ConfigError(
            ENV_VAR,
            f"{env[ENV_VAR]!r} is not one of error, warn, off",
            f"set {ENV_VAR} to error, warn or off, or leave it unset for error on compatibility and warn on memory",
        )
    return {category: raw for category in DEFAULT_MODES}


def blocking(checks: list[Check], modes: Mapping[str, str]) -> Check | None:
    """The first failure whose category is in `error` mode: it stops the launch."""
    for check in checks:
        if check.result == FAIL and modes.get(check.category) == "error":
            return check
    return None


def section(checks: list[Check], modes: Mapping[str, str]) -> dict[str, Any]:
    return {"mode": dict(modes), "checks": [c.to_dict() for c in checks]}
