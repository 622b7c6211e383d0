"""NIM_SPECDEC_ARGS: a JSON object of vLLM runtime-config keys.

`speculative_config` may be a JSON object or a JSON-encoded string (the guide's examples use
the string form); every other key becomes a vLLM engine argument.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from nim_specdec.config import variables as var
from nim_specdec.config.jsonvalue import loads, loads_object, snake
from nim_specdec.plan.engine.vllm_schema import VllmKnowledge, resolve_option
from nim_specdec.errors import ConfigError

VARIABLE = var.SPECDEC_ARGS
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
SPEC_KEY = "speculative_config"


def parse_spec_value(value: Any, where: str) -> dict[str, Any]:
    """A speculative_config value as written in JSON: a non-empty object, or a JSON string holding one."""
    from nim_specdec.errors import ConfigError  # noqa: PLC0415

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
    from nim_specdec.errors import ConfigError  # noqa: PLC0415

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


def parse_json_scalar(text: str) -> Any:
    """A dotted `--speculative-config.KEY VALUE` value: JSON where it parses, else the raw string."""
    try:
        return loads(text, "")
    except Exception:  # noqa: BLE001 - any non-JSON text is a plain string, as vLLM treats it
        return text


# Arguments the launcher sets itself, and where the user sets them instead: vLLM keeps the last of two,
# so a second --model would serve another model than the one the plan, pre-flight and trust rules checked.
_LAUNCHER_SET = {
    "--model": "set the target with NIM_MODEL_PATH (or --model on the command line)",
    "--middleware": "the launcher sets --middleware itself; capture is NIM_CAPTURE_ENABLE and NIM_CAPTURE_ARGS",
}


def refuse_launcher_arguments(engine_env: Mapping[str, Any], known: VllmKnowledge) -> None:
    for key in engine_env:
        option = resolve_option("--" + key.replace("_", "-"), known)
        if option in _LAUNCHER_SET:
            raise ConfigError(
                var.SPECDEC_ARGS, f"key {key!r} sets {option}, which the launcher sets itself", _LAUNCHER_SET[option]
            )
