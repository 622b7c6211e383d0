"""The guide's EAGLE3 example (local draft, bare name "eagle3_draft") on the demo model.

On vLLM's CPU backend an EAGLE3 draft loads and the server becomes ready, but the first drafted step
fails: the CPU model runner does not hand the target's auxiliary hidden states to the draft, so
`combine_hidden_states` gets [tokens, H] instead of [tokens, 3H] and the engine dies. So here the check
goes as far as "materialized, loaded by vLLM, ready"; drafting is checked where a GPU is visible.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nim_specdec.smoke import post_json, served_model

from .conftest import base_env, launch
from .workload import PROMPTS

pytestmark = pytest.mark.e2e

EAGLE3_CONFIG = {"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}


def gpu_visible() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no usable torch means no GPU for this purpose
        return False


def probe(server, record) -> None:
    record.model = served_model(server.base)
    status, answer = post_json(
        server.base + "/v1/completions",
        {"model": record.model, "prompt": PROMPTS[0], "max_tokens": 16, "temperature": 0},
        timeout=120,
    )
    record.extra["first_request"] = (status, str(answer)[:500])
    record.extra["alive_after_request"] = server.proc.poll() is None


@pytest.fixture(scope="session")
def eagle3_run(demo_model, e2e_dir):
    env = base_env(e2e_dir / "eagle3")
    env.update(NIM_MODEL_PATH=str(demo_model / "target"), NIM_DRAFT_MODEL_PATH=str(demo_model / "draft-eagle3"))
    return launch("eagle3", env, ["--speculative-config", json.dumps(EAGLE3_CONFIG)], e2e_dir, probe=probe)


def test_eagle3_draft_materialized_and_loaded(eagle3_run, demo_model):
    link = Path(eagle3_run.env["NIM_WORKSPACE"]) / "eagle3_draft"
    assert link.is_symlink() and link.resolve() == (demo_model / "draft-eagle3").resolve(), eagle3_run.context()
    assert eagle3_run.ready_statuses[-1] == 200, eagle3_run.context()
    # vLLM read the rewritten path and built the EAGLE3 drafter from it.
    assert str(link) in eagle3_run.log and "method='eagle3'" in eagle3_run.log, eagle3_run.context()


def test_eagle3_drafts_on_gpu(eagle3_run):
    if not gpu_visible():
        pytest.skip("EAGLE3 drafting needs a GPU: vLLM's CPU runner does not pass auxiliary hidden states")
    status, answer = eagle3_run.extra["first_request"]
    assert status == 200, f"{answer}" + eagle3_run.context()
