"""The one seam to the GPU: total and used memory of each visible GPU, through NVML.

`pynvml` (the nvidia-ml-py package) is imported when a reading is asked for, never at import
time, and its absence, a missing driver or any NVML error reads as "no GPU": the memory
check is then skipped, it never stops a launch. Tests and benchmarks pass a StaticProbe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from nim_specdec.preflight.nvml import nvml_session

Reading = tuple[int, int, str]  # (total_bytes, used_bytes, name)


class GpuProbe(Protocol):
    def read(self) -> Sequence[Reading] | None:
        """One reading per visible GPU, in CUDA order; None when no GPU can be read."""
        ...


@dataclass(frozen=True)
class StaticProbe:
    readings: Sequence[Reading] | None

    def read(self) -> Sequence[Reading] | None:
        return self.readings


def visible(count: int, uuids: Sequence[str], cuda_visible_devices: str | None) -> list[int] | None:
    """NVML indices that CUDA_VISIBLE_DEVICES leaves visible, in its order (pure).

    NVML sees every GPU of the machine; the server sees only these. An entry that names no
    GPU ends the list, as it does for CUDA. None means the variable could not be understood.
    """
    if cuda_visible_devices is None:
        return list(range(count))
    picked: list[int] = []
    for entry in (e.strip() for e in cuda_visible_devices.split(",")):
        if not entry:
            break
        if entry.lstrip("-").isdigit():
            index = int(entry)
            if not 0 <= index < count:
                break
            picked.append(index)
            continue
        matches = [i for i, uuid in enumerate(uuids) if uuid.startswith(entry) or uuid.startswith("GPU-" + entry)]
        if len(matches) != 1:
            return None if not picked else picked
        picked.append(matches[0])
    return picked


@dataclass(frozen=True)
class NvmlProbe:
    cuda_visible_devices: str | None = None  # as the server will see it (config.host_env); None: unset

    def read(self) -> Sequence[Reading] | None:
        with nvml_session() as pynvml:
            if pynvml is not None:
                return [_reading(pynvml, h) for h in visible_handles(pynvml, self.cuda_visible_devices) or ()] or None
        return None


def _reading(pynvml: Any, handle: Any) -> Reading:
    info = pynvml.nvmlDeviceGetMemoryInfo(handle)
    return int(info.total), int(info.used), text(pynvml.nvmlDeviceGetName(handle))


def visible_handles(pynvml: Any, cuda_visible_devices: str | None) -> list[Any] | None:
    """NVML's handles of the GPUs CUDA_VISIBLE_DEVICES leaves visible, in its order (None or []: none)."""
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    indices = visible(len(handles), [text(pynvml.nvmlDeviceGetUUID(h)) for h in handles], cuda_visible_devices)
    return None if indices is None else [handles[i] for i in indices]


def text(value: bytes | str) -> str:
    """NVML answers bytes or str, by version."""
    return value.decode() if isinstance(value, bytes) else value
