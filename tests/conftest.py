from __future__ import annotations

from pathlib import Path

import pytest

from core_fixtures import make_models


@pytest.fixture
def models(tmp_path: Path) -> dict[str, Path]:
    return make_models(tmp_path)
