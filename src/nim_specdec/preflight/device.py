"""The device a plan assumes: the first visible GPU (name, memory, driver) through NVML where an NVIDIA
driver is loaded, else the CPU model. Read once per resolution, at the edge; any failure reads as "not
known" (None), never as an error.

NVML is asked only where the driver's /proc entry exists: importing pynvml alone costs about 85 ms,
which a CPU machine's `plan` should not pay for an answer it knows.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from nim_specdec.engines.protocol.sections import DevicePlan
from nim_specdec.preflight.gpu import text, visible_handles
from nim_specdec.preflight.nvml import nvml_session

NVIDIA_PROC = Path("/proc/driver/nvidia")
CPUINFO = Path("/proc/cpuinfo")


def cpu_model(cpuinfo: str) -> str | None:
    """The CPU's model name from /proc/cpuinfo's text (x86 "model name", Arm "Hardware"/"CPU part")."""
    for key in ("model name", "Hardware", "Processor", "cpu model"):
        for line in cpuinfo.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return " ".join(value.split())
    return None


def cpu_device(cpuinfo: str, count: int | None) -> DevicePlan:
    return DevicePlan("cpu", cpu_model(cpuinfo) or platform.machine() or "unknown CPU", count or 0, None, None)


def gpu_device(cuda_visible_devices: str | None) -> DevicePlan | None:
    """The first GPU CUDA_VISIBLE_DEVICES leaves visible, through NVML; None without one."""
    with nvml_session() as pynvml:
        handles = visible_handles(pynvml, cuda_visible_devices) if pynvml is not None else None
        if handles:
            first = handles[0]
            return DevicePlan(
                "gpu",
                text(pynvml.nvmlDeviceGetName(first)),
                len(handles),
                int(pynvml.nvmlDeviceGetMemoryInfo(first).total),
                text(pynvml.nvmlSystemGetDriverVersion()),
            )
    return None


def read_device(cuda_visible_devices: str | None) -> DevicePlan | None:
    """`cuda_visible_devices`: CUDA_VISIBLE_DEVICES as the server will see it (None: unset)."""
    found = gpu_device(cuda_visible_devices) if NVIDIA_PROC.exists() else None
    if found is not None:
        return found
    try:
        cpuinfo = CPUINFO.read_text(errors="replace")
    except OSError:
        cpuinfo = ""
    return cpu_device(cpuinfo, os.cpu_count())
