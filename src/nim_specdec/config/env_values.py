"""How one environment value is read: the one boolean rule, and the lenient flag of other tools' variables."""

from __future__ import annotations

from typing import Mapping

from nim_specdec.errors import ConfigError

# Where the download cache lives unless NIM_CACHE_PATH says otherwise (settings, and the capture file's default).
DEFAULT_CACHE_PATH = "/opt/nim/.cache"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def parse_bool(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    """Every NIM_* switch: unset is the default, anything but the listed words is an error (exit 2)."""
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(name, f"invalid value {raw!r}", "use 1 or 0 (also true/false, yes/no, on/off)")


def truthy(value: str | None) -> bool:
    """Another tool's switch (HF_HUB_OFFLINE): read the way that tool reads it, never refused by us."""
    return (value or "").strip().lower() in _TRUE
