"""The CUDA graph and compilation modes vLLM settles from the engine arguments, read before vLLM is imported.

vllm/config/vllm.py (__post_init__, 0.32 and 0.33) in this order: --enforce-eager turns compilation and CUDA
graphs off; a mode not given comes from the optimization level (-O, default O2); a schedule on V1 may lower a
full-graph mode to PIECEWISE (engines.vllm.schedule.schedule_rules); then `_normalize_piecewise_cudagraph_mode`
drops the
piecewise part of the CUDA graph mode where the model is not compiled piecewise (compilation mode other
than VLLM_COMPILE), before the model runner is picked. The CPU platform then compiles otherwise and captures
no CUDA graphs; a GPU platform's hook changes neither. Not read here (they are not engine arguments):
TORCH_COMPILE_DISABLE=1 and breakable CUDA graphs (VLLM_USE_BREAKABLE_CUDAGRAPH, or an architecture vLLM
opts in), which change the compilation mode too.
"""

from __future__ import annotations

from typing import Any, Mapping

# OPTIMIZATION_LEVEL_0x in vllm/config/vllm.py (the default level is O2).
_LEVEL_CUDAGRAPH_MODE = {0: "NONE", 1: "PIECEWISE", 2: "FULL_AND_PIECEWISE", 3: "FULL_AND_PIECEWISE"}
COMPILATION_MODES = ("NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE")  # CompilationMode, by value
# CUDAGraphMode.without_piecewise: what a mode keeps when the model is not compiled piecewise.
_WITHOUT_PIECEWISE = {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL_DECODE_ONLY"}


def engine_flag(view: Mapping[str, Any], key: str) -> bool:
    value = view.get(key)
    return value is True or (isinstance(value, str) and value.lower() in ("1", "true"))


def engine_int(value: Any, default: int) -> int:
    try:
        return int(value) if not isinstance(value, bool) else default
    except (TypeError, ValueError):
        return default  # vLLM's own parser reports a bad value


def nested_option(view: Mapping[str, Any], names: tuple[str, ...], key: str) -> Any:
    """A sub-key of a JSON config option, the dotted spellings (`-cc.cudagraph_mode`) applied last, as vLLM does."""
    found = None
    for name in names:
        whole = view.get(name)
        if isinstance(whole, dict) and key in whole:
            found = whole[key]
    for name in names:
        if f"{name}.{key}" in view:
            found = view[f"{name}.{key}"]
    return found


def optimization_level(view: Mapping[str, Any]) -> int:
    """-O (`-O3`, `-O 3`, `-O=3`, `--optimization-level 3`); vLLM's default is 2."""
    level = 2
    for key, value in view.items():
        if key in ("optimization_level", "O"):
            level = engine_int(value, level)
        elif len(key) == 2 and key[0] == "O" and key[1].isdigit() and value is True:
            level = int(key[1])
    return level


def compilation_mode(view: Mapping[str, Any]) -> str:
    """compilation_config.mode as vLLM settles it on a GPU: NONE with --enforce-eager, else the mode given (its
    value 0-3 or its name), else VLLM_COMPILE above -O0 (vllm/config/vllm.py, __post_init__)."""
    if engine_flag(view, "enforce_eager"):
        return "NONE"
    given = nested_option(view, ("compilation_config", "cc"), "mode")
    name = str(given).strip().upper() if isinstance(given, (int, str)) and not isinstance(given, bool) else ""
    if name.isdigit() and int(name) < len(COMPILATION_MODES):
        return COMPILATION_MODES[int(name)]
    if name in COMPILATION_MODES:
        return name
    return "VLLM_COMPILE" if optimization_level(view) > 0 else "NONE"


def cudagraph_mode_checked(view: Mapping[str, Any]) -> str:
    """The CUDA graph mode V2's checks read on a GPU: a mode with piecewise graphs loses them where the model is
    not compiled piecewise (`_normalize_piecewise_cudagraph_mode`, before the runner is picked), so DBO with
    `-O0 -cc.cudagraph_mode=PIECEWISE` runs V2 without CUDA graphs instead of being refused."""
    mode = cudagraph_mode_given(view)
    return mode if compilation_mode(view) == "VLLM_COMPILE" else _WITHOUT_PIECEWISE.get(mode, mode)


def cudagraph_mode_given(view: Mapping[str, Any]) -> str:
    """The CUDA graph mode vLLM holds when it applies a schedule's override: NONE with --enforce-eager, else
    compilation_config.cudagraph_mode, else the optimization level's (vllm/config/vllm.py, __post_init__)."""
    if engine_flag(view, "enforce_eager"):
        return "NONE"
    given = nested_option(view, ("compilation_config", "cc"), "cudagraph_mode")
    if isinstance(given, str) and given.strip():
        return given.strip().upper()
    return _LEVEL_CUDAGRAPH_MODE.get(optimization_level(view), "FULL_AND_PIECEWISE")
