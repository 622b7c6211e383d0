"""How one environment value is read, by its kind in config.variables: the one boolean rule, integers and
numbers within the declared range, choices from the declared list, and the lenient flag of other tools' variables.

Every reader takes the variable's range, choices and default from its declaration (the launcher's table's,
or the row given as `decl`); a bad value is a ConfigError (exit 2) naming the variable, the value and what
is accepted.
"""

from __future__ import annotations

import math
from typing import Mapping

from nim_specdec.config.variables import CACHE_PATH, TABLE, Variable
from nim_specdec.errors import ConfigError

# Where the download cache lives unless NIM_CACHE_PATH says otherwise (settings, and the capture file's default).
DEFAULT_CACHE_PATH = str(TABLE[CACHE_PATH].default)

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def parse_bool(env: Mapping[str, str], name: str, default: bool | None = False) -> bool | None:
    """Every NIM_* switch: unset is the default, anything but the listed words is an error (exit 2).
    A declared variable's default is its declaration's (None for a switch that is not set means "not given")."""
    raw = env.get(name)
    if raw is None:
        return TABLE[name].default if name in TABLE else default  # type: ignore[return-value]
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(name, f"invalid value {raw!r}", "use 1 or 0 (also true/false, yes/no, on/off)")


def read_int(env: Mapping[str, str], name: str, decl: Variable | None = None) -> int | None:
    """A declared integer: its default when unset or empty, else a whole number in its range."""
    decl = decl or TABLE[name]
    lo, hi = int(decl.lo or 0), int(decl.hi or 0)
    raw = env.get(name, "").strip()
    if not raw:
        return decl.default  # type: ignore[return-value]
    try:
        value = int(raw, 10)
    except ValueError:
        raise ConfigError(
            name, f"invalid value {raw!r} is not an integer", f"use an integer from {lo} to {hi}"
        ) from None
    if not lo <= value <= hi:
        raise ConfigError(name, f"value {value} is out of range", f"use an integer from {lo} to {hi}")
    return value


def read_number(env: Mapping[str, str], name: str, whole: bool = False, decl: Variable | None = None) -> float:
    """A declared number (seconds, sizes): its default when unset or empty, else a finite number in its range;
    `whole`: an integer written either way (`8`, `8.0`)."""
    decl = decl or TABLE[name]
    lo, hi = float(decl.lo or 0), float(decl.hi or 0)
    raw = env.get(name, "").strip()
    if not raw:
        return float(decl.default)  # type: ignore[arg-type]
    fix = f"set a number from {lo:g} to {hi:g}"
    try:
        value = float(raw) if len(raw) <= 32 else math.nan
    except ValueError:
        raise ConfigError(name, f"{raw[:40]!r} is not a number", fix) from None
    if not math.isfinite(value):
        raise ConfigError(name, f"{raw[:40]!r} is not a finite number", fix)
    if not lo <= value <= hi:
        raise ConfigError(name, f"{raw!r} is out of range", fix)
    if whole and not value.is_integer():
        raise ConfigError(name, f"{raw!r} is not a whole number", f"set an integer from {lo:g} to {hi:g}")
    return value


def read_choice(env: Mapping[str, str], name: str, decl: Variable | None = None) -> str | None:
    """A declared choice: its default when unset or empty, else one of its choices (case-insensitive), spelt
    as declared (`debug` is DEBUG, `SIZE` is size)."""
    decl = decl or TABLE[name]
    raw = env.get(name, "").strip()
    if not raw:
        return decl.default  # type: ignore[return-value]
    value = {choice.lower(): choice for choice in decl.choices}.get(raw.lower())
    if value is None:
        raise ConfigError(name, f"invalid value {raw!r}", f"use one of: {', '.join(decl.choices)}")
    return value


def truthy(value: str | None) -> bool:
    """Another tool's switch (HF_HUB_OFFLINE): read the way that tool reads it, never refused by us."""
    return (value or "").strip().lower() in _TRUE
