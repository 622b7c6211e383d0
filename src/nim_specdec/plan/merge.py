"""Which layer each engine argument and speculative_config key takes its value from: the layers folded lowest
precedence first, remembering where each key came from; and no layer may set an argument the launcher sets
itself."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from nim_specdec.config import variables as var
from nim_specdec.config.engine_variables import EngineVariables
from nim_specdec.errors import ConfigError

Layer = tuple[str, Mapping[str, Any] | None]  # (origin label, values)


def merge_spec(layers: Iterable[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
    """Fold speculative_config layers. A layer whose method differs from the one so far replaces
    the whole config: forcing n-gram on an MTP model must not carry MTP-only keys along."""
    config: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for label, values in layers:
        if not values:
            continue
        method = values.get("method")
        if method is not None and config.get("method") not in (None, method):
            config, origin = {}, {}
        for key, value in values.items():
            config[key] = value
            origin[key] = label
    return config, origin


def merge_engine(layers: Iterable[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
    """Fold engine-argument layers key by key; a higher layer wins."""
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for label, values in layers:
        for key, value in (values or {}).items():
            merged[key] = value
            origin[key] = label
    return merged, origin


def engine_layers(variables: EngineVariables, names: list[str], engine_env: Mapping[str, Any]) -> list[Layer]:
    """The engine-argument layers below the command line, lowest first: defaults < served names < the NIM
    variables that set one vLLM argument < NIM_SPECDEC_ARGS (NIM_PASSTHROUGH_ARGS and the command line follow)."""
    layers: list[Layer] = [(var.SERVER_PORT if variables.port_given else "default", {"port": variables.port})]
    if all(name != var.SHUTDOWN_TIMEOUT for name, _, _ in variables.one_argument):
        # vLLM's own default, 0, aborts every request in flight on SIGTERM: a rollout would drop them.
        layers.append(("default", {"shutdown_timeout": var.TABLE[var.SHUTDOWN_TIMEOUT].default}))
    if names:
        by = var.SERVED_MODEL_NAME if variables.served_model_name else "builtin"
        # One name as a string, several as the list vLLM's nargs="+" option takes.
        layers.append((by, {"served_model_name": names[0] if len(names) == 1 else list(names)}))
    if variables.max_model_len is not None:
        layers.append((var.MAX_MODEL_LEN, {"max_model_len": variables.max_model_len}))
    layers += [(name, {argument: value}) for name, argument, value in variables.one_argument]
    layers.append((var.SPECDEC_ARGS, engine_env))
    return layers


# Arguments the launcher sets itself, and where the user sets them instead: vLLM keeps the last of two,
# so a second --model would serve another model than the one the plan, pre-flight and trust rules checked.
_LAUNCHER_SET = {
    "--model": "set the target with NIM_MODEL_PATH (or --model on the command line)",
    "--middleware": "the launcher sets --middleware itself; capture is NIM_CAPTURE_ENABLE and NIM_CAPTURE_ARGS",
}


def refuse_launcher_arguments(engine_env: Mapping[str, Any], option_name: Callable[[str], str | None]) -> None:
    """`option_name`: the engine's reading of a flag (the option it sets, by its canonical flag)."""
    for key in engine_env:
        option = option_name("--" + key.replace("_", "-"))
        if option in _LAUNCHER_SET:
            raise ConfigError(
                var.SPECDEC_ARGS, f"key {key!r} sets {option}, which the launcher sets itself", _LAUNCHER_SET[option]
            )
