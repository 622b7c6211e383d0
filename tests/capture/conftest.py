"""Fixtures of the capture tests: the demo model and the AIPerf executable (end-to-end tests only)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """The project's demo target (`nim-specdec demo-model`); its greedy cycles give n-gram accepted drafts."""
    out = tmp_path_factory.mktemp("demo-model")
    # A separate process: torch and transformers stay out of the test process.
    subprocess.run([sys.executable, "-m", "nim_specdec", "demo-model", str(out)], check=True,
                   env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=300, capture_output=True)
    return out / "target"


@pytest.fixture(scope="session")
def aiperf_bin() -> str:
    path = Path(os.environ.get("AIPERF_BIN") or REPO / ".venv-aiperf" / "bin" / "aiperf")
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"aiperf not found at {path}: run `make aiperf-venv` or set AIPERF_BIN to an aiperf 0.13.0 executable")
    return str(path)
