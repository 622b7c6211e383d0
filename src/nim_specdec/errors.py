"""The launcher's exception tree and its one exit-code table (README's table is this one).

    exit 0   ok
    exit 1   LauncherError        internal error: a bug, never bad input
    exit 2   ConfigError          a variable, argument or file is misconfigured
    exit 3   MaterializeError     a model or draft cannot be made available locally
             └── ServerStartError a server the launcher starts does not come up
    exit 4   UnreachableError     a server or network endpoint cannot be reached or answers wrongly

Every error is reported as one line on stderr: what is wrong (the variable or argument,
the offending value with secrets masked) and how to fix it. No traceback reaches the user.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_CONFIG = 2
EXIT_MATERIALIZE = 3
EXIT_UNREACHABLE = 4

# (code, meaning) in the order README and `--help` texts show them.
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "ok"),
    (EXIT_INTERNAL, "internal error (a bug, never bad input)"),
    (EXIT_CONFIG, "configuration: a variable, argument or file is wrong"),
    (EXIT_MATERIALIZE, "a model or draft cannot be materialized, or a server we start does not come up"),
    (EXIT_UNREACHABLE, "a server or network endpoint cannot be reached or answers wrongly"),
)

# C0 and C1 control characters and DEL: a value printed raw could forge log lines or drive the terminal.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))}


def printable(text: str) -> str:
    """`text` with every control character written as an escape (\\x1b, \\x0a): one line, inert. A lone
    surrogate (a byte that was not UTF-8 in a file name or variable) becomes an escape too: it cannot be printed."""
    text = text.translate(_CONTROL)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class LauncherError(Exception):
    exit_code = EXIT_INTERNAL

    def __init__(self, where: str, problem: str, fix: str = "") -> None:
        self.where = where
        self.problem = problem
        self.fix = fix
        super().__init__(self.one_line())

    def one_line(self) -> str:
        text = f"{self.where}: {self.problem}" if self.where else self.problem
        if self.fix:
            text += f"; {self.fix}"
        # A message must stay on one line whatever the offending value contained; any control
        # character that is not white space becomes an escape.
        return printable(" ".join(text.split()))


class ConfigError(LauncherError):
    exit_code = EXIT_CONFIG


class MaterializeError(LauncherError):
    exit_code = EXIT_MATERIALIZE


class ServerStartError(MaterializeError):
    """A server the launcher started exited or was not ready in time; the message ends with its last log line."""


class UnreachableError(LauncherError):
    exit_code = EXIT_UNREACHABLE


class Terminated(BaseException):
    """SIGTERM arrived (a pod being stopped): raised where the process is, so that every `finally` and
    cleanup handler runs (a download stops; its folder stays for the next start to resume) before the process
    exits 128 + 15.
    A BaseException, so that no `except Exception` takes it for an ordinary failure."""
