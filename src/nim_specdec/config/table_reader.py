"""The environment read by the variable table: each row's reader (its kind's, or the one the row names) parses its
variable into the settings field the row names, and the settings classes take their fields from the rows.

Rows are read in declaration order, so a reader may use a field read before its own (NIM_WORKSPACE's default
lies under the parsed NIM_CACHE_PATH). A row that sets one vLLM argument and names no field lands in
`engine_variables.one_argument` when set. A settings class decorated with `table_fields` gets a field for
every row of its section: the default is what the row's reader gives for an empty environment, the type the
class writes (or the row's kind's). Pure: the caller passes the mapping.
"""

from __future__ import annotations

import shlex
from typing import Any, Callable, Mapping

from nim_specdec.config import variables as var
from nim_specdec.config.capture_config import parse_capture
from nim_specdec.config.env_values import _TRUE, parse_bool, read_choice, read_int, read_number
from nim_specdec.config.preflight_modes import parse_preflight_modes
from nim_specdec.config.sources import SourceRef, parse_source, path_problem
from nim_specdec.config.tuned_for import parse_tuned_for
from nim_specdec.config.variable_table import KIND_TYPES, Variable
from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import preview

Reader = Callable[[Mapping[str, str], Variable, Mapping[str, Any]], Any]
ENGINE_FIELD = "engine_variables.one_argument"  # (variable, vLLM argument, value) of the rows set that have no field
# Unlike parse_bool, an empty NIM_S5CMD is not "off": it means the default, auto.
_OFF = {"0", "false", "no", "off"}


def _abs_dir(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    value = env.get(name, "").strip() or default
    if value is None:
        return None
    if not value.startswith("/"):
        raise ConfigError(name, f"relative path {value[:200]!r} is not allowed", "use an absolute directory")
    problem = path_problem(value)
    if problem:
        raise ConfigError(name, f"path {preview(value)!r} {problem}", "use a shorter absolute directory")
    return value.rstrip("/") or "/"


def _text(env: Mapping[str, str], v: Variable, read: Mapping[str, Any]) -> str | None:
    return env.get(v.name, "").strip() or None


def _json(env: Mapping[str, str], v: Variable, read: Mapping[str, Any]) -> str | None:
    """The text as written, None when unset or blank: the JSON is parsed by what reads it (config.specdec_args)."""
    raw = env.get(v.name)
    return raw if (raw or "").strip() else None


def _source(env: Mapping[str, str], v: Variable, read: Mapping[str, Any]) -> SourceRef | None:
    raw = env.get(v.name)
    if raw is None or not raw.strip():
        return None
    return parse_source(raw, v.name)


def _arguments(env: Mapping[str, str], v: Variable, read: Mapping[str, Any]) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(env.get(v.name, "")))
    except ValueError as err:
        raise ConfigError(v.name, f"cannot split into arguments ({err})", "balance the quotes") from None


def _release(env: Mapping[str, str], v: Variable, read: Mapping[str, Any]) -> str | None:
    value = env.get(v.name, "").strip()
    if not value:
        return None
    parts = value.split(".")
    if len(value) > 20 or len(parts) != 3 or not all(p.isdigit() and p.isascii() for p in parts):
        raise ConfigError(
            v.name, f"invalid value {preview(value)!r}: not a release X.Y.Z", "use e.g. 0.34.0 or unset it"
        )
    return value


def _s5cmd(env: Mapping[str, str], v: Variable, read: Mapping[str, Any]) -> str:
    """auto, on or off: the switch words of parse_bool for on and off (its choices as the docs write them)."""
    raw = env.get(v.name, "")
    value = raw.strip().lower()
    if value in ("", "auto"):
        return "auto"
    if value in _TRUE:
        return "on"
    if value in _OFF:
        return "off"
    raise ConfigError(
        v.name, f"invalid value {raw.strip()[:40]!r}", "use auto (default), 1 (require s5cmd) or 0 (boto3)"
    )


READERS: dict[str, Reader] = {
    # By kind.
    "bool": lambda env, v, read: parse_bool(env, v.name, v.default),  # type: ignore[arg-type]
    "int": lambda env, v, read: read_int(env, v.name, v),
    "number": lambda env, v, read: read_number(env, v.name, decl=v),
    "choice": lambda env, v, read: read_choice(env, v.name, v),
    "text": _text,
    "path": lambda env, v, read: _abs_dir(env, v.name, v.default),  # type: ignore[arg-type]
    "source": _source,
    "json": _json,
    "args": _arguments,
    # Named by a row.
    "whole": lambda env, v, read: int(read_number(env, v.name, whole=True, decl=v)),  # an integer, `8.0` too
    "workspace": lambda env, v, read: _abs_dir(env, v.name, read["locations.cache_path"] + "/workspace"),
    "release": _release,
    "s5cmd": _s5cmd,
    "preflight": lambda env, v, read: parse_preflight_modes(env),
    "capture": lambda env, v, read: parse_capture(env, read["locations.cache_path"]),  # NIM_CAPTURE_ARGS with it
    "tuned_for": lambda env, v, read: parse_tuned_for(env.get(v.name)),
}


def read_rows(
    env: Mapping[str, str], table: Mapping[str, Variable] | None = None, within: str | None = None
) -> dict[str, Any]:
    """Every row's parsed value keyed by its field ("download.timeout" for a section's), and ENGINE_FIELD;
    `within`: the rows of that section only."""
    read: dict[str, Any] = {}
    engine = []
    for v in (var.TABLE if table is None else table).values():
        if within is not None and (v.field is None or v.section != within):
            continue
        if v.field is None:
            if v.vllm is not None and env.get(v.name, "").strip():  # unset or empty: vLLM's default applies
                engine.append((v.name, v.vllm, READERS[v.reader or v.kind](env, v, read)))
            continue
        value = READERS[v.reader or v.kind](env, v, read)
        read[v.field] = v.convert(value) if v.convert is not None else value
    read[ENGINE_FIELD] = tuple(engine)
    return read


def section(read: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The values of one section's fields, keyed by attribute ("" for the settings' own)."""
    prefix = f"{name}." if name else ""
    return {
        field[len(prefix) :]: value
        for field, value in read.items()
        if field.startswith(prefix) and "." not in field[len(prefix) :]
    }


def table_fields(name: str = "", table: Mapping[str, Variable] | None = None) -> Callable[[type], type]:
    """Class decorator, under @dataclass: a field for every row of section `name`, defaulting to what the row's
    reader gives for an empty environment. The class may write a field's type (for its readers); its default
    is the row's alone, so a class default for a row's field is refused."""
    rows = [v for v in (var.TABLE if table is None else table).values() if v.field and v.section == name]

    def apply(cls: type) -> type:
        defaults = section(read_rows({}, table, within=name or None), name)
        notes = dict(cls.__dict__.get("__annotations__", {}))
        for v in rows:
            if v.attribute in cls.__dict__:
                raise TypeError(f"{cls.__name__}.{v.attribute}: the default is the {v.name} row's, not the class's")
            notes.setdefault(v.attribute, KIND_TYPES[v.kind])
            setattr(cls, v.attribute, defaults[v.attribute])
        cls.__annotations__ = notes
        return cls

    return apply
