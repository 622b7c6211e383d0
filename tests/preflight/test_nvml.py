"""NVML is imported only where a driver's markers exist: a CPU host or a GPU-less init container pays nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec.preflight.nvml import driver_present, start_nvml


def test_driver_present_reads_the_markers(tmp_path: Path):
    marker = tmp_path / "nvidiactl"
    assert driver_present([marker]) is False
    marker.touch()
    assert driver_present([tmp_path / "absent", marker]) is True


def test_without_markers_pynvml_is_never_imported():
    code = (
        "import sys; from pathlib import Path; from nim_specdec.preflight.nvml import start_nvml\n"
        "print(start_nvml([Path('/nonexistent/driver/nvidia')]), 'pynvml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["None", "False"], done.stderr


def test_with_a_marker_but_no_driver_nvml_refuses_and_reads_none(tmp_path: Path):
    # nvidia-ml-py is installed here, but no driver library: nvmlInit fails and the reading is None.
    if Path("/proc/driver/nvidia").exists():
        pytest.skip("a real driver is loaded: test_nvml_reads_a_real_gpu covers this machine")
    (tmp_path / "nvidiactl").touch()
    code = (
        "import sys; from pathlib import Path; from nim_specdec.preflight.nvml import start_nvml\n"
        f"print(start_nvml([Path({str(tmp_path / 'nvidiactl')!r})]), 'pynvml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["None", "True"], done.stderr
    assert start_nvml([tmp_path / "absent"]) is None
