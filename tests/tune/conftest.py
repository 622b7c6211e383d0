from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tune_demo_model(tmp_path_factory) -> Path:
    """The project's demo model (target, draft-copy, draft-other, draft-eagle3)."""
    from nim_specdec.tools.demo_model import make_demo_model  # noqa: PLC0415 - needs torch

    root = tmp_path_factory.mktemp("demo-model")
    make_demo_model(root)
    return root


@pytest.fixture(scope="session")
def tune_aiperf_bin() -> str:
    # AIPerf lives in its own virtualenv (`make aiperf-venv`); AIPERF_BIN points elsewhere.
    path = Path(os.environ.get("AIPERF_BIN") or Path(__file__).resolve().parents[2] / ".venv-aiperf" / "bin" / "aiperf")
    if not os.access(path, os.X_OK):
        pytest.fail(f"aiperf not found at {path}: run `make aiperf-venv` or set AIPERF_BIN")
    return str(path)
