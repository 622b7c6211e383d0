"""The variable table's mechanism: what one NIM_* variable declares, the table they are declared into, and
the readers of it (config.variables holds the declarations themselves). Standard library only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

Default = Union[bool, int, float, str, None]


@dataclass(frozen=True)
class Variable:
    name: str
    kind: str  # bool | int | number | choice | text | path | source | json | args
    default: Default  # the parsed default; None: unset means "not given"
    meaning: str  # one line, Markdown
    nim: str = ""  # "2.x", "1.x" or "": where NIM for LLMs documents the same name
    lo: float | None = None  # int and number: the accepted range, both ends included
    hi: float | None = None
    choices: tuple[str, ...] = ()  # choice: the accepted values, as the docs write them
    vllm: str | None = None  # the vLLM engine argument (snake case) it sets, when it maps to exactly one
    shown_default: str | None = None  # the docs' default column, where the parsed default does not say it
    internal: bool = False  # written by the launcher for its own child process; not for users, not documented

    @property
    def default_text(self) -> str:
        if self.shown_default is not None:
            return self.shown_default
        if self.default is None:
            return ""
        if isinstance(self.default, bool):
            return "`1`" if self.default else "`0`"
        if isinstance(self.default, float) and self.default.is_integer():
            return f"`{int(self.default)}`"
        return f"`{self.default}`"


TABLE: dict[str, Variable] = {}
MAX_INT = 2**31 - 1


def declare(name: str, kind: str, default: Default, meaning: str, **more: object) -> str:
    if name in TABLE:
        raise ValueError(f"{name} declared twice")
    TABLE[name] = Variable(name, kind, default, meaning, **more)  # type: ignore[arg-type]
    return name


def documented() -> list[Variable]:
    """The variables a user sets, in declaration order (docs/configuration.md's table)."""
    return [v for v in TABLE.values() if not v.internal]


def vllm_mapped() -> list[Variable]:
    """The variables that set one vLLM engine argument, in declaration order."""
    return [v for v in TABLE.values() if v.vllm is not None]
