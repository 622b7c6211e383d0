"""SGLang's interpreter for the tests that run its own resolution: SGLANG_PYTHON, else .venv-sglang/bin/python in
the checkout (`make sglang-venv`). Without it those tests fail, naming the target; they are not skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def sglang_python() -> str:
    python = os.environ.get("SGLANG_PYTHON") or str(ROOT / ".venv-sglang" / "bin" / "python")
    if not Path(python).is_file():
        pytest.fail(f"no SGLang interpreter at {python}: run `make sglang-venv` or set SGLANG_PYTHON", pytrace=False)
    return python
