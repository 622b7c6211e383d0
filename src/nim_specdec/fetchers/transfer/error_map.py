"""Each backend's table from its library's exceptions to ours, matched by type (isinstance), the way
httpx groups its own: an HTTP status says it first (5xx, 408 and 429 are worth a retry), then the first
rule whose types match. A transient error is retried; a permanent one ends the download with one line
(exit 3). Tables are built on first use, so a backend's library is imported only when it runs.
"""

from __future__ import annotations

import errno
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from nim_specdec.errors import MaterializeError


class TransferFailed(Exception):  # noqa: N818 - the library's failure, as the transfer's child saw it
    """A library's failure in the transfer's child process (fetchers/download/guarded_transfer.py): its first line, and
    whether a retry may cure it, judged in the child, where the exception was."""

    def __init__(self, message: str, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class Rule:
    types: tuple[type[BaseException], ...]
    transient: bool = False
    problem: str = ""  # a permanent rule's message; "" leaves the error to the generic download failure line
    fix: str = ""


@contextmanager
def permanent_errors(uri: str, raise_permanent: Callable[[str, BaseException], None]) -> Iterator[None]:
    """A library's error inside becomes the backend's one line where `raise_permanent` knows it for permanent;
    any other goes on as it was (a MaterializeError too), for materialize to retry or report."""
    try:
        yield
    except MaterializeError:
        raise
    except Exception as err:  # noqa: BLE001 - translate the permanent ones, let materialize retry the rest
        raise_permanent(uri, err)
        raise


def transient_status(status: int | None) -> bool | None:
    """None when there is no HTTP status to go by."""
    if not isinstance(status, int):
        return None
    return status >= 500 or status in (408, 429)


def match(err: BaseException, rules: tuple[Rule, ...]) -> Rule | None:
    return next((rule for rule in rules if isinstance(err, rule.types)), None)


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_DISK_FULL_TEXT = ("no space left on device", "disk quota exceeded")


def disk_full(err: BaseException) -> bool:
    """Whether `err`, or an error it was raised from (SDKs wrap OSError in their own), is a full disk or
    quota: never a network problem, and never cured by a retry."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _DISK_FULL:
            return True
        if any(text in str(current).lower() for text in _DISK_FULL_TEXT):  # a tool's message (s5cmd)
            return True
        current = current.__cause__ or current.__context__
    return False


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
