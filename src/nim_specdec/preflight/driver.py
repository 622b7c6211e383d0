"""Is the host's GPU driver new enough for the CUDA the image's torch was built with?

A driver older than the image's CUDA fails deep inside vLLM's start ("CUDA driver version is
insufficient", or no GPU at all) after minutes of loading. NVML states the newest CUDA the driver
supports (nvmlSystemGetCudaDriverVersion), and torch/version.py states the CUDA torch was built
for; comparing the two costs milliseconds and no `import torch`. The outcome is one warning line,
never a stop: a compatibility package (cuda-compat) can make an older driver work.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from nim_specdec.preflight.nvml import nvml_session

# The first driver branch of each CUDA major (NVIDIA's release notes): what to tell the user to install.
_DRIVER_FOR_CUDA_MAJOR = {11: "R450", 12: "R525", 13: "R580"}
_VERSION = re.compile(r"^(\d+)\.(\d+)")
_TORCH_CUDA = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)


def parse_cuda(text: str | None) -> tuple[int, int] | None:
    """(major, minor) of "13.0", "12.8.1" (CUDA_VERSION of NVIDIA's images); None when absent or unreadable."""
    match = _VERSION.match(text.strip()) if text else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def from_nvml(value: int) -> tuple[int, int]:
    """NVML's integer (12080 is CUDA 12.8) as (major, minor)."""
    return value // 1000, (value % 1000) // 10


def driver_warning(driver: tuple[int, int] | None, image: tuple[int, int] | None) -> str | None:
    """The warning when the driver supports an older CUDA than the image's, else None (pure)."""
    if driver is None or image is None or driver >= image:
        return None
    branch = _DRIVER_FOR_CUDA_MAJOR.get(image[0])
    newer = f"a driver of branch {branch} or later" if branch else "a newer driver"
    return (
        f"GPU driver: it supports CUDA up to {driver[0]}.{driver[1]}, "
        f"older than the image's CUDA {image[0]}.{image[1]}, "
        f"so vLLM may fail to initialize the GPU; install {newer} on the host (or the matching cuda-compat package), "
        f"or use an image built for CUDA {driver[0]}.{driver[1]}"
    )


def torch_cuda(version_py: str) -> tuple[int, int] | None:
    """The CUDA torch was built for, from the text of torch/version.py (None for a CPU build)."""
    match = _TORCH_CUDA.search(version_py)
    return parse_cuda(match.group(1)) if match else None


def image_cuda(cuda_version: str | None) -> tuple[int, int] | None:
    """The installed torch's CUDA (read from its version.py, not imported), else NVIDIA images' CUDA_VERSION
    (`cuda_version`, as the environment gives it)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        try:
            found = torch_cuda((Path(spec.origin).parent / "version.py").read_text())
        except OSError:
            found = None
        if found is not None:
            return found
    return parse_cuda(cuda_version)


def read_driver_cuda() -> tuple[int, int] | None:
    """The newest CUDA the host's driver supports, through NVML; None without NVML, a driver or a GPU."""
    with nvml_session() as pynvml:
        if pynvml is not None:
            read = getattr(pynvml, "nvmlSystemGetCudaDriverVersion_v2", pynvml.nvmlSystemGetCudaDriverVersion)
            return from_nvml(int(read()))
    return None  # no NVML, or an unreadable driver version: nothing is compared


def check_driver(cuda_version: str | None) -> str | None:
    """The warning line for this machine, if any (the imperative shell of driver_warning)."""
    image = image_cuda(cuda_version)
    return driver_warning(read_driver_cuda(), image) if image is not None else None
