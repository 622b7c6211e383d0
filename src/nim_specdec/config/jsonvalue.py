"""JSON values from variables and arguments, with errors that say where the JSON broke."""

from __future__ import annotations

from typing import Any

from nim_specdec.errors import ConfigError
from nim_specdec.text.redact import preview
from nim_specdec.text.strict_json import FILE_INT_DIGITS, MAX_DEPTH, MAX_INT_DIGITS, loads

__all__ = ["FILE_INT_DIGITS", "MAX_DEPTH", "MAX_INT_DIGITS", "kebab", "loads", "loads_object", "snake"]


def _preview(text: str, limit: int = 80) -> str:
    return preview(text, limit)


def loads_object(text: str, where: str) -> dict[str, Any]:
    value = loads(text, where)
    if not isinstance(value, dict):
        raise ConfigError(
            where,
            f"expected a JSON object, got {type(value).__name__} {_preview(text)!r}",
            'write it as {"key": value, ...}',
        )
    return value


def snake(key: str) -> str:
    """vLLM engine arguments are spelled with dashes on the command line and underscores in JSON."""
    return key.strip().lstrip("-").replace("-", "_")


def kebab(key: str) -> str:
    return snake(key).replace("_", "-")
