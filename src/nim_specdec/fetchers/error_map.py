"""Each backend's table from its library's exceptions to ours, matched by type (isinstance), the way
httpx groups its own: an HTTP status says it first (5xx, 408 and 429 are worth a retry), then the first
rule whose types match. A transient error is retried; a permanent one ends the download with one line
(exit 3). Tables are built on first use, so a backend's library is imported only when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from nim_specdec.errors import MaterializeError


@dataclass(frozen=True)
class Rule:
    types: tuple[type[BaseException], ...]
    transient: bool = False
    problem: str = ""  # a permanent rule's message; "" leaves the error to the generic download failure line
    fix: str = ""


def transient_status(status: int | None) -> bool | None:
    """None when there is no HTTP status to go by."""
    if not isinstance(status, int):
        return None
    return status >= 500 or status in (408, 429)


def match(err: BaseException, rules: tuple[Rule, ...]) -> Rule | None:
    return next((rule for rule in rules if isinstance(err, rule.types)), None)


def is_transient(err: BaseException, rules: tuple[Rule, ...], status: int | None = None) -> bool:
    by_status = transient_status(status)
    if by_status is not None:
        return by_status
    rule = match(err, rules)
    if rule is not None:
        return rule.transient
    # The standard library's own network failures (socket errors, timeouts) under any SDK.
    return isinstance(err, (OSError, TimeoutError))


def raise_permanent(uri: str, err: BaseException, rules: tuple[Rule, ...]) -> None:
    """Raise the rule's one-line MaterializeError when a permanent rule with a message matches."""
    rule = match(err, rules)
    if rule is not None and not rule.transient and rule.problem:
        raise MaterializeError(uri, rule.problem, rule.fix) from None


def lazy(build: Callable[[], tuple[Rule, ...]]) -> Callable[[], tuple[Rule, ...]]:
    table: list[tuple[Rule, ...]] = []

    def rules() -> tuple[Rule, ...]:
        if not table:
            table.append(build())
        return table[0]

    return rules
