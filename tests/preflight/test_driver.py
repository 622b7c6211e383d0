"""The driver check: the host driver's CUDA (NVML) against the CUDA of the image's torch, one warning line
when the driver is older, nothing when NVML, a driver or a CUDA torch is absent."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from nim_specdec.preflight.driver import driver_warning, from_nvml, image_cuda, parse_cuda, read_driver_cuda, torch_cuda


@pytest.mark.parametrize(
    "driver, image, warns, fix",
    [
        ((12, 8), (13, 0), True, "branch R580 or later"),  # the torch 2.13 / CUDA 13 image on an R570 host
        ((12, 4), (12, 8), True, "branch R525 or later"),
        ((12, 9), (12, 9), False, None),
        ((13, 0), (12, 8), False, None),  # a newer driver runs older CUDA
        ((13, 1), (13, 0), False, None),
        ((11, 8), (14, 0), True, "a newer driver"),  # a major this table does not know
        (None, (13, 0), False, None),  # no NVML or no driver: nothing to compare
        ((12, 8), None, False, None),  # a CPU torch: no CUDA to compare with
    ],
)
def test_warns_only_when_the_driver_is_older(driver, image, warns, fix) -> None:
    line = driver_warning(driver, image)
    assert (line is not None) is warns
    if warns:
        assert "\n" not in line and f"CUDA up to {driver[0]}.{driver[1]}" in line
        assert f"the image's CUDA {image[0]}.{image[1]}" in line and fix in line


@pytest.mark.parametrize(
    "value, expected", [(13000, (13, 0)), (12080, (12, 8)), (12090, (12, 9)), (11080, (11, 8)), (13010, (13, 1))]
)
def test_nvml_integer(value: int, expected: tuple[int, int]) -> None:
    assert from_nvml(value) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("__version__ = '2.13.0+cu130'\ncuda: Optional[str] = '13.0'\n", (13, 0)),
        ("cuda = '12.8'\nhip = None\n", (12, 8)),
        ("cuda: Optional[str] = None\n", None),  # a CPU build
        ("git_version = 'abc'\n", None),
    ],
)
def test_torch_version_file(text: str, expected) -> None:
    assert torch_cuda(text) == expected


@pytest.mark.parametrize(
    "text, expected", [("13.0.1", (13, 0)), ("12.8", (12, 8)), ("", None), (None, None), ("x", None)]
)
def test_cuda_version_text(text, expected) -> None:
    assert parse_cuda(text) == expected


def test_image_cuda_falls_back_to_cuda_version_without_a_cuda_torch() -> None:
    import torch

    if torch.version.cuda:  # a CUDA torch is what is read first
        assert image_cuda("1.0") == parse_cuda(torch.version.cuda)
    else:  # this machine's CPU torch states none: NVIDIA's images' CUDA_VERSION is the fallback
        assert image_cuda("13.0.1") == (13, 0)
        assert image_cuda(None) is None


def test_nvml_absent_reads_no_driver_and_serve_gives_no_warning() -> None:
    """pynvml blocked from import in a fresh interpreter: the reading is None and check_driver says nothing,
    whatever the image's CUDA."""
    code = (
        "import sys; sys.modules['pynvml'] = None\n"
        "from nim_specdec.preflight.driver import check_driver, read_driver_cuda\n"
        "print(read_driver_cuda(), check_driver('13.0'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "None"]


def test_nvml_without_a_driver_reads_none() -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU driver is present; test_real_driver_version covers it")
    import pynvml  # noqa: F401 - nvidia-ml-py is installed: the absent driver is what is tested

    assert read_driver_cuda() is None


@pytest.mark.gpu
def test_real_driver_version() -> None:
    if not shutil.which("nvidia-smi"):
        pytest.skip("no GPU is visible")
    driver = read_driver_cuda()
    assert driver is not None and driver >= (11, 0)
