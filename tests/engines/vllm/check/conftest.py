from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from agree_corpus import all_cases  # noqa: E402
from agree_harness import run_case  # noqa: E402

from nim_specdec_lab.demo_model import PARTS, make_demo_model  # noqa: E402


@pytest.fixture(scope="session")
def agree_models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("agree-demo")
    make_demo_model(root)
    return {part: root / part for part in PARTS}


@pytest.fixture(scope="session")
def outcomes(agree_models, tmp_path_factory):
    """Every case once per session: the launcher in-process, vLLM in-process on both command lines. Offline while
    they run, and only then: the process goes on to download from loopback hubs in later tests, through children
    that inherit its environment, and the Hub's library reads its constants once, at import (imported first)."""
    import transformers  # noqa: F401
    from huggingface_hub import constants

    workspace = str(tmp_path_factory.mktemp("agree-cache") / "workspace")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")  # only local directories are judged
        mp.setattr(constants, "HF_HUB_OFFLINE", True)
        return [run_case(case, str(agree_models["target"])) for case in all_cases(agree_models, workspace)]
