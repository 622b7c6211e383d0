from __future__ import annotations

from pathlib import Path

import pytest

from core_fixtures import make_models
# The shared vLLM runs and the one demo model: session fixtures every test folder can use.
from vllm_runs import demo_model, eagle3_run, ngram_run, off_run, runs_dir  # noqa: F401


@pytest.fixture
def models(tmp_path: Path) -> dict[str, Path]:
    return make_models(tmp_path)
