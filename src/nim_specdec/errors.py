"""The launcher's exception tree and exit codes.

    LauncherError            exit 1   anything the launcher itself reports
    ├── ConfigError          exit 2   a variable, argument or file is misconfigured
    ├── MaterializeError     exit 3   a model or draft cannot be made available locally
    └── UnreachableError     exit 4   a server or network endpoint cannot be reached or answers wrongly

Every error is reported as one line on stderr: what is wrong (the variable or argument,
the offending value with secrets masked) and how to fix it. No traceback reaches the user.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_CONFIG = 2
EXIT_MATERIALIZE = 3
EXIT_UNREACHABLE = 4


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
        # A message must stay on one line whatever the offending value contained.
        return " ".join(text.split())


class ConfigError(LauncherError):
    exit_code = EXIT_CONFIG


class MaterializeError(LauncherError):
    exit_code = EXIT_MATERIALIZE


class UnreachableError(LauncherError):
    exit_code = EXIT_UNREACHABLE
