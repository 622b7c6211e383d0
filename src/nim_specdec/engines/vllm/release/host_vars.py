"""vLLM's own variables the plan depends on, read once at the edge into VllmHost: VLLM_USE_V2_MODEL_RUNNER as vLLM
reads it, ARCTIC_INFERENCE_ENABLED (spec.arctic refuses it), whether the user set LD_PRELOAD (theirs wins over
the CPU build's preloads) and which of vLLM's cache folders they set (theirs stay theirs). Only VllmEngine reads
them; the planner and the engine protocol never name them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from nim_specdec.errors import ConfigError

USE_V2_ENV = "VLLM_USE_V2_MODEL_RUNNER"
ARCTIC_ENV = "ARCTIC_INFERENCE_ENABLED"  # on when exactly "1", as arctic_inference/envs.py reads it
# vLLM's cache variables -> the sub-directory of the compile cache's key directory each points at (compile_dirs).
# vLLM puts Inductor's cache under VLLM_CACHE_ROOT itself; FlashInfer keeps its JIT modules under
# FLASHINFER_WORKSPACE_BASE.
CACHE_DIRS = {"VLLM_CACHE_ROOT": "vllm", "TRITON_CACHE_DIR": "triton", "FLASHINFER_WORKSPACE_BASE": "flashinfer"}


@dataclass(frozen=True)
class VllmHost:
    use_v2_model_runner: bool | None = None  # None when unset
    arctic_plugin: bool = False  # ARCTIC_INFERENCE_ENABLED=1: arctic-inference's vLLM plugin would patch vLLM
    ld_preload_set: bool = False
    compile_cache_user_set: tuple[str, ...] = ()  # which of CACHE_DIRS the user set, sorted


def read_vllm_host(env: Mapping[str, str]) -> VllmHost:
    return VllmHost(
        use_v2_model_runner=parse_use_v2_env(env.get(USE_V2_ENV)),
        arctic_plugin=env.get(ARCTIC_ENV) == "1",
        ld_preload_set=bool(env.get("LD_PRELOAD", "").strip()),
        compile_cache_user_set=tuple(sorted(name for name in CACHE_DIRS if env.get(name))),
    )


def parse_use_v2_env(raw: str | None) -> bool | None:
    """VLLM_USE_V2_MODEL_RUNNER as vLLM reads it (`bool(int(value))`); a value it cannot read is refused here
    instead of failing inside vLLM with a traceback."""
    if raw is None:
        return None
    try:
        return bool(int(raw))
    except ValueError:
        raise ConfigError(
            USE_V2_ENV,
            f"invalid value {raw[:40]!r}; vLLM reads it as an integer",
            "use 1 (V2 model runner) or 0 (V1), or unset it to let vLLM choose",
        ) from None
