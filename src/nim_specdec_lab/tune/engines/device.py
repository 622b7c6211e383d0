"""The device tune's servers ran on: the visible GPUs through NVML (name, memory, driver), else the CPU model.

Read once per server at the edge; `cpu_model` (the plan's own) is the pure part. NVML (the nvidia-ml-py
package) is optional: without it, or without a driver, the record is the CPU's, and says so in `source`.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from nim_specdec.preflight.device import cpu_model  # the plan's reading: NIM_TUNED_FOR compares the two
from nim_specdec.preflight.gpu import text, visible_handles
from nim_specdec.preflight.nvml import nvml_session

CPUINFO = "/proc/cpuinfo"


def nvml_devices(cuda_visible_devices: str | None) -> dict[str, Any] | None:
    """The GPUs CUDA_VISIBLE_DEVICES (as the launcher's settings hold it; None: unset) leaves visible, with
    the driver version; None where NVML cannot tell (asked only where a driver is loaded, as the launcher asks)."""
    with nvml_session() as pynvml:
        handles = visible_handles(pynvml, cuda_visible_devices) if pynvml is not None else None
        if handles:
            gpus = [
                {
                    "name": text(pynvml.nvmlDeviceGetName(h)),
                    "memory_gib": round(int(pynvml.nvmlDeviceGetMemoryInfo(h).total) / 2**30, 1),
                }
                for h in handles
            ]
            return {"kind": "gpu", "gpus": gpus, "driver": text(pynvml.nvmlSystemGetDriverVersion()), "source": "nvml"}
    return None


def cpu_device(cpuinfo: str | None, cores: int | None) -> dict[str, Any]:
    return {
        "kind": "cpu",
        "cpu": (cpu_model(cpuinfo) if cpuinfo else None) or "unknown",
        "cores": cores,
        "source": CPUINFO if cpuinfo else "none",
    }


def read_device(cuda_visible_devices: str | None) -> dict[str, Any]:
    gpus = nvml_devices(cuda_visible_devices)
    if gpus is not None:
        return gpus
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as src:
            cpuinfo: str | None = src.read()
    except OSError:
        cpuinfo = None
    return cpu_device(cpuinfo, os.cpu_count())


def describe_device(device: Mapping[str, Any]) -> str:
    """One line for tune.md: `2 x NVIDIA H100 80GB HBM3 (79.6 GiB each), driver 550.54` or the CPU model."""
    if device.get("kind") == "gpu":
        gpus = device["gpus"]
        names = sorted({g["name"] for g in gpus})
        memory = sorted({g["memory_gib"] for g in gpus})
        return (
            f"{len(gpus)} x {', '.join(names)} ({', '.join(f'{m} GiB' for m in memory)} each), "
            f"driver {device['driver']}"
        )
    cores = f", {device['cores']} cores" if device.get("cores") else ""
    return f"CPU {device.get('cpu', 'unknown')}{cores}"
