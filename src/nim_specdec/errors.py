"""The launcher's exception tree and exit codes.

    LauncherError            exit 1   anything the launcher itself reports
    ├── ConfigError          exit 2   a variable, argument or file is misconfigured
    └── MaterializeError     exit 3   a model or draft cannot be made available locally

Every error is reported as one line on stderr: what is wrong (the variable or argument,
the offending value with secrets masked) and how to fix it. No traceback reaches the user.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_CONFIG = 2
EXIT_MATERIALIZE = 3

# C0 and C1 control characters and DEL: a value printed raw could forge log lines or drive the terminal.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))}


def printable(text: str) -> str:
    """`text` with every control character written as an escape (\\x1b, \\x0a): one line, inert."""
    return text.translate(_CONTROL)


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
