"""JSON values from variables and arguments, with errors that say where the JSON broke."""

from __future__ import annotations

import json
from typing import Any

from nim_specdec.errors import ConfigError


def _preview(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def loads(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(
            where,
            f"invalid JSON at line {err.lineno} column {err.colno} ({err.msg}) in {_preview(text)!r}",
            "check the quoting: inside a shell, wrap the whole JSON in single quotes",
        ) from None
    except RecursionError:
        raise ConfigError(where, "JSON nested too deeply", "flatten the value") from None


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
