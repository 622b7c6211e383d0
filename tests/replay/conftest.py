from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # bench_servers.py


@pytest.fixture(scope="session")
def demo_target(tmp_path_factory) -> Path:
    from nim_specdec.tools.demo_model import make_demo_model

    root = tmp_path_factory.mktemp("demo-model")
    make_demo_model(root)
    return root / "target"


@pytest.fixture(scope="session")
def aiperf_bin() -> Path:
    # AIPerf lives in its own virtualenv (`make aiperf-venv`); AIPERF_BIN points elsewhere.
    path = Path(os.environ.get("AIPERF_BIN") or Path(__file__).resolve().parents[2] / ".venv-aiperf" / "bin" / "aiperf")
    if not os.access(path, os.X_OK):
        pytest.fail(f"aiperf not found at {path}: run `make aiperf-venv` or set AIPERF_BIN")
    return path
