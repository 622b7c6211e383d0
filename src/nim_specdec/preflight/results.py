"""A check's outcome, which failure stops the launch, and the plan section.

A check only states facts: pass, warn, fail or skipped, with a one-line message and its
figures. Whether a failure stops the launch is decided afterwards from the mode of its
category (config.preflight_modes), so the same checks serve `plan` (report everything) and
`serve` (stop on error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from nim_specdec.config.preflight_modes import COMPATIBILITY, MEMORY, PreflightModes
from nim_specdec.errors import ConfigError
from nim_specdec.plan.plan_sections import CheckRecord, PreflightSection

PASS, WARN, FAIL, SKIPPED = "pass", "warn", "fail", "skipped"
__all__ = ["COMPATIBILITY", "MEMORY", "Check", "blocking", "passed", "section", "skipped"]


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

    def record(self) -> CheckRecord:
        return CheckRecord(self.name, self.result, self.message, dict(self.figures))


def passed(name: str, message: str = "", **figures: Any) -> Check:
    return Check(name, PASS, message, figures=figures)


def skipped(name: str, reason: str, **figures: Any) -> Check:
    return Check(name, SKIPPED, reason, figures=figures)


def blocking(checks: list[Check], modes: PreflightModes) -> Check | None:
    """The first failure whose category is in `error` mode: it stops the launch."""
    for check in checks:
        if check.result == FAIL and modes.of(check.category) == "error":
            return check
    return None


def section(checks: list[Check], modes: PreflightModes) -> PreflightSection:
    return PreflightSection(modes.as_dict(), tuple(c.record() for c in checks))
