"""NIM_SPECDEC_ARGS: a JSON object of vLLM runtime-config keys, parsed once, with the settings.

`speculative_config` may be a JSON object or a JSON-encoded string (the guide's examples use the string form);
every other key becomes a vLLM engine argument. The settings parse it only when NIM_SPECDEC_ENABLE=1: with
speculation off the plan ignores the variable with a warning, so a value that would not parse stops nothing.
What depends on the vLLM release (an engine key that names an argument the launcher sets itself) is the
plan's to refuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from nim_specdec.config import variables as var
from nim_specdec.config.jsonvalue import loads_object, snake
from nim_specdec.errors import ConfigError

VARIABLE = var.SPECDEC_ARGS
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
SPEC_KEY = "speculative_config"


@dataclass(frozen=True)
class SpecdecArgs:
    speculative_config: dict[str, Any] | None  # None: the object has no speculative_config key
    engine: dict[str, Any]  # every other key, in snake case: vLLM engine arguments


def parse_spec_value(value: Any, where: str) -> dict[str, Any]:
    """A speculative_config value as written in JSON: a non-empty object, or a JSON string holding one."""
    if isinstance(value, str) and value.strip():
        return loads_object(value, f"{where} (speculative_config string)")
    if isinstance(value, dict) and value:
        return value
    # "", {} and null were dropped before, and the automatic config applied in their place: the user wrote
    # a speculative_config, so one that says nothing is refused, never read as "choose one for me".
    empty = isinstance(value, (str, dict)) and not (value.strip() if isinstance(value, str) else value)
    got = "null" if value is None else "an empty value" if empty else type(value).__name__
    raise ConfigError(
        where,
        f"speculative_config must be a non-empty JSON object (or a JSON string holding one), got {got}",
        'write "speculative_config": {"method": "ngram", ...}, or leave the key out for the automatic config',
    )


def parse_specdec_args(raw: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Return (speculative_config or None, engine arguments keyed in snake_case)."""
    obj = loads_object(raw, VARIABLE)
    spec: dict[str, Any] | None = None
    spec_value: Any = None
    engine: dict[str, Any] = {}
    seen: set[str] = set()
    for key, value in obj.items():
        name = snake(key)
        if not _KEY.match(name):
            raise ConfigError(
                VARIABLE, f"key {key!r} is not a vLLM argument name", "use names like gpu_memory_utilization"
            )
        if name == SPEC_KEY:
            if SPEC_KEY in seen:
                raise ConfigError(VARIABLE, f"key {key!r} is given twice (snake and kebab case)", "keep one spelling")
            seen.add(SPEC_KEY)
            spec_value = value
        elif name in engine:
            raise ConfigError(VARIABLE, f"key {key!r} is given twice (snake and kebab case)", "keep one spelling")
        else:
            engine[name] = value
    if SPEC_KEY in seen:  # after the whole object: a key given twice is named as such, whatever its values
        spec = parse_spec_value(spec_value, VARIABLE)
    return spec, engine


def specdec_args(enable: bool, raw: str | None) -> SpecdecArgs | None:
    """The settings' typed NIM_SPECDEC_ARGS: None when unset, blank, or speculation is off."""
    if not enable or raw is None:
        return None
    return SpecdecArgs(*parse_specdec_args(raw))
