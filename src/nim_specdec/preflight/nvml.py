"""NVML, started only where an NVIDIA driver is loaded.

Importing pynvml costs 10 to 80 ms on a start; a machine without the driver (a CPU host, an init container
that only pre-fetches) has nothing to read, and its kernel module's entries tell so for free.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Iterable, Iterator

# The driver's kernel module publishes /proc/driver/nvidia; the container toolkit passes /dev/nvidiactl in.
DRIVER_MARKERS = (Path("/proc/driver/nvidia"), Path("/dev/nvidiactl"))


def driver_present(markers: Iterable[Path] = DRIVER_MARKERS) -> bool:
    return any(path.exists() for path in markers)


def start_nvml(markers: Iterable[Path] = DRIVER_MARKERS) -> ModuleType | None:
    """pynvml with nvmlInit done (the caller shuts it down), or None: no driver, no nvidia-ml-py, or NVML refused."""
    if not driver_present(markers):
        return None
    try:
        import pynvml  # noqa: PLC0415 - only where a driver is: its import is most of a plan's NVML cost
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded...: no GPU here
        return None
    return pynvml


@contextmanager
def nvml_session(markers: Iterable[Path] = DRIVER_MARKERS) -> Iterator[ModuleType | None]:
    """pynvml started for the block (None where start_nvml gives none), shut down after it. An NVML error
    inside the block ends it quietly: a GPU that cannot be read is reported as absent, so the caller
    returns its "not known" after the block."""
    pynvml = start_nvml(markers)
    try:
        yield pynvml
    except Exception:  # noqa: BLE001, S110 - NVMLError_*, or a malformed answer: nothing read
        pass
    finally:
        if pynvml is not None:
            try:
                pynvml.nvmlShutdown()
            except Exception:  # noqa: BLE001, S110
                pass
