"""Other tools' variables the launcher decides on, read once at the edge with the NIM_* ones.

The plan depends on a few variables the launcher does not own: whether the user set LD_PRELOAD or one of
vLLM's cache folders (theirs then stay theirs), which GPUs CUDA_VISIBLE_DEVICES leaves visible, the image's
CUDA_VERSION, whether HF_HUB_OFFLINE keeps hf:// sources offline, which values are secrets to mask,
whether ARCTIC_INFERENCE_ENABLED turns on arctic-inference's vLLM plugin (plan.arctic refuses it),
VLLM_USE_V2_MODEL_RUNNER as vLLM reads it, and SGLANG_PYTHON, the interpreter SGLang is installed for.
They are read here into a typed value, so nothing below the edge reads the environment for them.
Credentials and endpoints of the download backends are not here: the fetchers read those from their
context's environment, where each client library expects them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from nim_specdec.text.redact import redact_env, secret_values
from nim_specdec.config.env_values import truthy
from nim_specdec.errors import ConfigError

USE_V2_ENV = "VLLM_USE_V2_MODEL_RUNNER"
ARCTIC_ENV = "ARCTIC_INFERENCE_ENABLED"  # on when exactly "1", as arctic_inference/envs.py reads it
# vLLM's cache variables -> the sub-directory of the compile cache's key directory each points at
# (engines.vllm.release.compile_dirs). vLLM puts Inductor's cache under VLLM_CACHE_ROOT itself; FlashInfer keeps its JIT
# modules under FLASHINFER_WORKSPACE_BASE.
CACHE_DIRS = {"VLLM_CACHE_ROOT": "vllm", "TRITON_CACHE_DIR": "triton", "FLASHINFER_WORKSPACE_BASE": "flashinfer"}


@dataclass(frozen=True)
class HostEnv:
    ld_preload_set: bool = False  # the user's LD_PRELOAD wins over the CPU build's preloads
    compile_cache_user_set: tuple[str, ...] = ()  # which of vLLM's cache variables (CACHE_DIRS) the user set, sorted
    cuda_visible_devices: str | None = None  # None: unset (every GPU is visible)
    cuda_version: str | None = None  # CUDA_VERSION of NVIDIA's images, as written
    hf_hub_offline: bool = False  # HF_HUB_OFFLINE: hf:// sources from the cache only, as the Hub's library does
    arctic_plugin: bool = False  # ARCTIC_INFERENCE_ENABLED=1: arctic-inference's vLLM plugin would patch vLLM
    sglang_python: str | None = None  # SGLANG_PYTHON: the interpreter SGLang is installed for (NIM_ENGINE=sglang)
    shown_env: Mapping[str, str] = field(default_factory=dict, compare=False)  # as the plan prints it, masked
    secrets: tuple[str, ...] = field(default=(), compare=False, repr=False)  # secret values, longest first


def read_host_env(env: Mapping[str, str]) -> HostEnv:
    return HostEnv(
        ld_preload_set=bool(env.get("LD_PRELOAD", "").strip()),
        compile_cache_user_set=tuple(sorted(name for name in CACHE_DIRS if env.get(name))),
        cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
        cuda_version=env.get("CUDA_VERSION"),
        hf_hub_offline=truthy(env.get("HF_HUB_OFFLINE")),
        arctic_plugin=env.get(ARCTIC_ENV) == "1",
        sglang_python=env.get("SGLANG_PYTHON") or None,
        shown_env=redact_env(env),
        secrets=tuple(secret_values(env)),
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
