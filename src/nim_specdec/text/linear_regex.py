"""Patterns matched on every request, in time linear in the path: RE2, not Python's backtracking `re`.

A capture's `endpoint_pattern` is searched in each request's path. With `re`, a pattern such as `(a+)+$`
and a long path would take exponential time inside the server's event loop; RE2 has no backtracking and
refuses the constructs that need it (back-references, look-around). Paths longer than MAX_PATH_CHARS are
never matched, so that a match costs a bounded time whatever the client sends.
"""

from __future__ import annotations

from typing import Protocol

MAX_PATTERN_CHARS = 4096
MAX_PATH_CHARS = 8192
# RE2's memory budget for one compiled pattern; a pattern that needs more (huge repetition counts) is refused.
_MAX_MEM = 8 * 1024 * 1024


class Searcher(Protocol):
    def search(self, text: str) -> object | None: ...


class PatternError(ValueError):
    """A pattern RE2 cannot compile, with RE2's reason."""


def compile_linear(pattern: str) -> Searcher:
    """The pattern compiled by RE2; PatternError when it is too long, not text, or not RE2 syntax."""
    import re2  # noqa: PLC0415 - only a server that captures needs it

    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"is longer than {MAX_PATTERN_CHARS} characters")
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own line on stderr
    options.max_mem = _MAX_MEM
    try:
        return re2.compile(pattern, options)
    except re2.error as err:
        reason = err.args[0] if err.args else err
        raise PatternError(reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)) from None
    except (ValueError, TypeError, OverflowError) as err:  # a lone surrogate cannot be given to RE2
        raise PatternError(f"is not valid text ({type(err).__name__})") from None


def search_bounded(pattern: Searcher, path: str) -> bool:
    """Whether `pattern` occurs in `path`; a path over MAX_PATH_CHARS, or one that is not text, never matches."""
    if len(path) > MAX_PATH_CHARS:
        return False
    try:
        return pattern.search(path) is not None
    except (ValueError, TypeError):  # a path with a lone surrogate: not a path a client could send as UTF-8
        return False
