"""The NVML seam: which GPUs the server will see, and readings where NVML is or is not there."""

from __future__ import annotations

import shutil

import pytest

from nim_specdec.preflight.gpu import NvmlProbe, StaticProbe, visible

UUIDS = ["GPU-aaaa1111", "GPU-bbbb2222", "GPU-cccc3333", "GPU-dddd4444"]


@pytest.mark.parametrize(
    "cvd, expected",
    [
        (None, [0, 1, 2, 3]),
        ("", []),
        ("2", [2]),
        ("3,1", [3, 1]),
        ("1,7,2", [1]),  # CUDA stops at the first entry that names no GPU
        ("1,-1,2", [1]),
        ("GPU-bbbb2222", [1]),
        ("cccc", [2]),  # a unique UUID prefix, without "GPU-"
        ("GPU-zzzz", None),
        ("0,GPU-zzzz", [0]),
    ],
)
def test_cuda_visible_devices(cvd, expected):
    assert visible(4, UUIDS, cvd) == expected


def test_static_probe_returns_its_readings():
    assert StaticProbe([(80, 1, "gpu")]).read() == [(80, 1, "gpu")]
    assert StaticProbe(None).read() is None


def test_nvml_reading_without_a_driver_is_no_gpu():
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU driver is present; test_nvml_reads_a_real_gpu covers it")
    import pynvml  # noqa: F401 - nvidia-ml-py is installed: the absent driver is what is tested

    assert NvmlProbe().read() is None


@pytest.mark.gpu
def test_nvml_reads_a_real_gpu():
    if not shutil.which("nvidia-smi"):
        pytest.skip("no GPU is visible")
    readings = NvmlProbe().read()
    assert readings, "NVML returned no GPU although nvidia-smi exists"
    total, used, name = readings[0]
    assert total > used >= 0 and total > 1024**3 and name
    assert NvmlProbe("").read() is None
