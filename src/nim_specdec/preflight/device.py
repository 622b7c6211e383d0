"""The device a plan assumes: the first visible GPU (name, memory, driver) through NVML where an NVIDIA
driver is loaded, else the CPU model. Read once per resolution, at the edge; any failure reads as "not
known" (None), never as an error.

NVML is asked only where the driver's /proc entry exists: importing pynvml alone costs about 85 ms,
which a CPU machine's `plan` should not pay for an answer it knows.
"""

from __future__ import annotations

import os
from pathlib import Path
from nim_specdec.config.engine_facts import DevicePlan
from nim_specdec.preflight.gpu import visible
from nim_specdec.preflight.nvml import start_nvml

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
    import platform  # noqa: PLC0415

    return DevicePlan("cpu", cpu_model(cpuinfo) or platform.machine() or "unknown CPU", count or 0, None, None)


def gpu_device(cuda_visible_devices: str | None) -> DevicePlan | None:
    """The first GPU CUDA_VISIBLE_DEVICES leaves visible, through NVML; None without one."""
    pynvml = start_nvml()
    if pynvml is None:
        return None
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        uuids = [_text(pynvml.nvmlDeviceGetUUID(h)) for h in handles]
        indices = visible(len(handles), uuids, cuda_visible_devices)
        if not indices:
            return None
        first = handles[indices[0]]
        return DevicePlan(
            "gpu",
            _text(pynvml.nvmlDeviceGetName(first)),
            len(indices),
            int(pynvml.nvmlDeviceGetMemoryInfo(first).total),
            _text(pynvml.nvmlSystemGetDriverVersion()),
        )
    except Exception:  # noqa: BLE001 - a GPU that cannot be read is reported as absent
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def read_device(cuda_visible_devices: str | None) -> DevicePlan | None:
    """`cuda_visible_devices`: CUDA_VISIBLE_DEVICES as the server will see it (None: unset)."""
    found = gpu_device(cuda_visible_devices) if NVIDIA_PROC.exists() else None
    if found is not None:
        return found
    try:
        text = CPUINFO.read_text(errors="replace")
    except OSError:
        text = ""
    return cpu_device(text, os.cpu_count())


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
