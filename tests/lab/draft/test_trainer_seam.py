"""The seam: the training stage's result read by the contract's names; a missing stage is one line."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from nim_specdec.errors import ConfigError
from nim_specdec_lab.draft import trainer_seam
from nim_specdec_lab.draft.trainer_seam import DraftJob, InstalledTrainer, read_result


@dataclass
class StageResult:
    draft_dir: str
    steps: int
    final_loss: float
    tokens: int
    seconds: float
    hidden_states_path: str
    library: str
    library_version: str


def test_result_read_by_the_contracts_names():
    got = read_result(StageResult("/d", 5, 1.5, 900, 2.5, "vllm", "speculators", "0.9.0"))
    assert (got.draft_dir, got.steps, got.final_loss, got.tokens) == (Path("/d"), 5, 1.5, 900)
    assert got.library == "speculators 0.9.0" and got.hidden_states_path == "vllm"


def test_the_job_reaches_the_stage_as_its_own_train_job():
    seen = {}

    class Module:
        class TrainJob:
            def __init__(self, **fields):
                seen.update(fields)

        @staticmethod
        def export_untrained(job):
            return "/u"

    job = DraftJob(Path("/t"), Path("/d.jsonl"), Path("/w"), Path("/o"), 1, 3, None, 3, (0, 1, 2), 256, 1e-3)
    assert InstalledTrainer(Module).export_untrained(job) == Path("/u")
    assert seen["aux_layer_ids"] == [0, 1, 2] and seen["steps"] == 3 and seen["target_dir"] == Path("/t")


def test_a_missing_training_stage_is_one_line(monkeypatch):
    monkeypatch.setattr(trainer_seam, "TRAINING_PACKAGE", "nim_specdec_lab.draft.no_such_stage")
    monkeypatch.delitem(sys.modules, "nim_specdec_lab.draft.no_such_stage", raising=False)
    with pytest.raises(ConfigError, match="training stage is not installed.*make setup"):
        trainer_seam.installed_trainer()
