"""The learnable demo target, regenerated-requests files and the draft venv, shared by the training tests."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec_lab.demo_model import LEARNABLE, LEARNABLE_PART, single_cycle_successor_map
from nim_specdec_lab.draft.training.errors import VENV_VARIABLE
from nim_specdec_lab.draft.training.job import TrainJob
from nim_specdec_lab.draft.training.supervisor import DEFAULT_VENV_PYTHON

REPO = Path(__file__).resolve().parents[4]


def draft_environ() -> dict[str, str]:
    python = os.environ.get(VENV_VARIABLE) or str(REPO / DEFAULT_VENV_PYTHON)
    if not Path(python).is_file():
        pytest.fail(f"the draft venv is missing ({python}): run `make draft-venv` or set {VENV_VARIABLE}")
    return {**os.environ, VENV_VARIABLE: python}


@pytest.fixture(scope="module")
def learnable(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("learnable")
    subprocess.run(
        [sys.executable, "-m", "nim_specdec", "demo-model", str(root), "--learnable"],
        check=True,
        capture_output=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return root / LEARNABLE_PART


def write_requests(path: Path, count: int, seed: int = 0) -> Path:
    """Requests shaped as the regeneration writes them; the responses walk the target's successor cycle."""
    successor = single_cycle_successor_map(LEARNABLE.seed)
    rng = random.Random(seed)
    with path.open("w") as out:
        for i in range(count):
            prompt = [0, 2, *(rng.randrange(5, 330) for _ in range(12)), 3]
            output, token = [], prompt[-1]
            for _ in range(24):
                token = successor[token] if rng.random() < 0.95 else rng.randrange(5, 330)
                output.append(token)
            messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "..."}]
            row = {"id": f"r{i}", "messages": messages, "prompt_token_ids": prompt, "output_token_ids": output}
            out.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def requests_file(tmp_path_factory) -> Path:
    return write_requests(tmp_path_factory.mktemp("data") / "requests.jsonl", 24)


def small_job(learnable: Path, data: Path, root: Path, **changes) -> TrainJob:
    fields = dict(
        target_dir=learnable,
        data_file=data,
        work_dir=root / "work",
        output_dir=root / "draft",
        steps=3,
        batch_size=2,
        save_steps=2,
        max_seq_len=64,
        learning_rate=3e-3,
    )
    fields.update(changes)
    return TrainJob(**fields)
