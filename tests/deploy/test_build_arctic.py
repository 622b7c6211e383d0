"""docker/build-arctic.sh (the GPU image's wheel stage) refuses what cannot build, in one line, before it
installs or compiles anything; the build itself runs in `make image-test` (tests/deploy/image_check.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "build-arctic.sh"
ENV = {"ARCTIC_INFERENCE": "arctic-inference==0.3.0", "ARCTIC_BUILD_DEPS": "nanobind==2.9.2"}


def _run(path: str, tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(SCRIPT), str(tmp_path / "wheels")],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": path, "HOME": str(tmp_path), **ENV, **extra},
    )


def test_a_base_without_torch_is_exit_2_naming_the_build_argument(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    python = shutil.which("python3", path="/usr/bin:/bin")
    assert python, "a system python3 is needed for this check"
    assert subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0, "it must lack torch"
    (bare / "python3").symlink_to(python)
    done = _run(f"{bare}:/usr/bin:/bin", tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "ARCTIC_INFERENCE=" in done.stderr and "torch" in done.stderr
    assert not (tmp_path / "wheels").exists()


def test_custom_ops_without_nvcc_is_exit_2(tmp_path: Path) -> None:
    venv_bin = os.path.dirname(sys.executable)  # this Python has torch, and a compiler is on /usr/bin
    assert shutil.which("c++", path="/usr/bin:/bin") and not shutil.which("nvcc", path=f"{venv_bin}:/usr/bin:/bin")
    done = _run(f"{venv_bin}:/usr/bin:/bin", tmp_path, ARCTIC_CUSTOM_OPS="1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "ARCTIC_CUSTOM_OPS=1" in done.stderr and "nvcc" in done.stderr and "-devel" in done.stderr
    assert "installing" not in done.stdout and not (tmp_path / "wheels").exists()
