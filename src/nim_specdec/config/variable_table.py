"""The variable table's mechanism: what one NIM_* variable declares, the table they are declared into, and
the readers of it (config.variables holds the declarations themselves; config.table_reader parses an
environment by them into the settings). Standard library only.

A row names the settings field its value lands on and how it is read, so that a new variable is one row:
the field, its type, its default (what an empty environment gives) and its parsing follow from the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

Default = Union[bool, int, float, str, None]
KINDS = ("bool", "int", "number", "choice", "text", "path", "source", "json", "args")
# The type a settings field gets from its row's kind where the settings class does not write one itself.
KIND_TYPES = {
    "bool": "bool | None",
    "int": "int | None",
    "number": "float",
    "choice": "str | None",
    "text": "str | None",
    "path": "str | None",
    "source": "SourceRef | None",
    "json": "str | None",
    "args": "tuple[str, ...]",
}


@dataclass(frozen=True)
class Variable:
    name: str
    kind: str  # one of KINDS
    default: Default  # the parsed default; None: unset means "not given"
    meaning: str  # one line, Markdown
    nim: str = ""  # "2.x", "1.x" or "": where NIM for LLMs documents the same name
    lo: float | None = None  # int and number: the accepted range, both ends included
    hi: float | None = None
    choices: tuple[str, ...] = ()  # choice: the accepted values, as the docs write them
    vllm: str | None = None  # the vLLM engine argument (snake case) it sets, when it maps to exactly one
    shown_default: str | None = None  # the docs' default column, where the parsed default does not say it
    internal: bool = False  # written by the launcher for its own child process; not for users, not documented
    # The settings field its parsed value lands on ("download.timeout": a field of the settings' download
    # section). None: a vLLM argument with no field of its own (Settings.engine_variables), a variable another
    # row's reader reads with its own (NIM_CAPTURE_ARGS with NIM_CAPTURE_ENABLE), or one settings do not read.
    field: str | None = None
    reader: str = ""  # how its value is parsed (config.table_reader.READERS); "": by its kind
    convert: Callable[[Any], Any] | None = None  # applied to the parsed value: the field's unit (MiB -> bytes)
    page: str = ""  # a docs page whose own table lists it too, besides configuration.md ("sources.md")

    @property
    def section(self) -> str:
        """The settings section its field lies in ("" for the settings themselves)."""
        return (self.field or "").rpartition(".")[0]

    @property
    def attribute(self) -> str:
        """The field's name within its section."""
        return (self.field or "").rpartition(".")[2]

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


def declare(name: str, kind: str, default: Default, meaning: str, table: dict | None = None, **more: object) -> str:
    """One row, into `table` (the launcher's TABLE unless given); returns the name, the constant code uses."""
    rows = TABLE if table is None else table
    if name in rows:
        raise ValueError(f"{name} declared twice")
    rows[name] = Variable(name, kind, default, meaning, **more)  # type: ignore[arg-type]
    return name


def documented(table: dict[str, Variable] | None = None, page: str = "") -> list[Variable]:
    """The variables a user sets, in declaration order: all of them (docs/configuration.md's table), or those a
    page's own table lists (`page`, e.g. "sources.md")."""
    rows = (TABLE if table is None else table).values()
    return [v for v in rows if not v.internal and (not page or v.page == page)]


def vllm_mapped() -> list[Variable]:
    """The variables that set one vLLM engine argument, in declaration order."""
    return [v for v in TABLE.values() if v.vllm is not None]
