"""Other tools' variables the launcher decides on, read once at the edge with the NIM_* ones.

The plan depends on a few variables the launcher does not own: which GPUs CUDA_VISIBLE_DEVICES leaves visible,
the image's CUDA_VERSION, whether HF_HUB_OFFLINE keeps hf:// sources offline, which values are secrets to mask, and
SGLANG_PYTHON, the interpreter SGLang is installed for (NIM_ENGINE=sglang). They are read here into a typed value,
so nothing below the edge reads the environment for them. vLLM's own variables (engines.vllm.release.host_vars)
are its package's to read, from its Installation.
Credentials and endpoints of the download backends are not here: the fetchers read those from their
context's environment, where each client library expects them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from nim_specdec.config.env_values import truthy
from nim_specdec.text.redact import redact_env, secret_values


@dataclass(frozen=True)
class HostEnv:
    cuda_visible_devices: str | None = None  # None: unset (every GPU is visible)
    cuda_version: str | None = None  # CUDA_VERSION of NVIDIA's images, as written
    hf_hub_offline: bool = False  # HF_HUB_OFFLINE: hf:// sources from the cache only, as the Hub's library does
    sglang_python: str | None = None  # SGLANG_PYTHON: the interpreter SGLang is installed for (NIM_ENGINE=sglang)
    shown_env: Mapping[str, str] = field(default_factory=dict, compare=False)  # as the plan prints it, masked
    secrets: tuple[str, ...] = field(default=(), compare=False, repr=False)  # secret values, longest first


def read_host_env(env: Mapping[str, str]) -> HostEnv:
    return HostEnv(
        cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
        cuda_version=env.get("CUDA_VERSION"),
        hf_hub_offline=truthy(env.get("HF_HUB_OFFLINE")),
        sglang_python=env.get("SGLANG_PYTHON") or None,
        shown_env=redact_env(env),
        secrets=tuple(secret_values(env)),
    )
