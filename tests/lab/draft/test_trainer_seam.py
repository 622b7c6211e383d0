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
class StageResult:  # the training stage's TrainResult, as it names its fields
    draft_dir: str
    steps: int
    final_loss: float | None
    tokens_trained: int
    seconds: float
    hidden_states: str
    library: str
    library_version: str
    aux_layer_ids: tuple[int, ...]


@dataclass(frozen=True)
class StageJob:  # the stage's TrainJob: no learning-rate field here, its own batch size, steps by default 200
    target_dir: Path
    data_file: Path
    work_dir: Path
    output_dir: Path
    seed: int = 0
    steps: int = 200
    num_speculative_tokens: int = 3
    aux_layer_ids: tuple[int, ...] | None = None
    max_seq_len: int = 512
    batch_size: int = 4


def test_result_read_by_the_stages_names():
    got = read_result(StageResult("/d", 5, 1.5, 900, 2.5, "online-transformers", "nvidia-modelopt", "0.47.0", (1, 2)))
    assert (got.draft_dir, got.steps, got.final_loss, got.tokens) == (Path("/d"), 5, 1.5, 900)
    assert got.library == "nvidia-modelopt 0.47.0" and got.hidden_states_path == "online-transformers"
    assert got.aux_layer_ids == (1, 2)


def test_the_job_reaches_the_stage_as_its_own_train_job():
    seen = []

    class Supervisor:
        @staticmethod
        def export_untrained(job):
            seen.append(job)
            return StageResult(str(job.output_dir), 0, None, 0, 0.1, "online-transformers", "m", "1", (1, 2))

    class Jobs:
        TrainJob = StageJob

    job = DraftJob(Path("/t"), Path("/d.jsonl"), Path("/w"), Path("/o"), 1, None, 3, None, 256, 1e-3)
    assert InstalledTrainer(Supervisor, Jobs).export_untrained(job).draft_dir == Path("/o")
    (sent,) = seen
    assert sent == StageJob(Path("/t"), Path("/d.jsonl"), Path("/w"), Path("/o"), 1, 200, 3, None, 256, 4)


def test_the_stages_own_target_checks_run_through_the_seam():
    calls = []

    class Checks:
        @staticmethod
        def target_shape(config, where):
            calls.append(("shape", where))
            return type("Shape", (), {"layers": 2})()

        @staticmethod
        def choose_aux_layers(layers, requested, where):
            calls.append(("aux", layers, requested))

    InstalledTrainer(None, None, Checks).check_target({"model_type": "llama"}, "/t", (1, 2))
    assert calls == [("shape", "/t"), ("aux", 2, (1, 2))]


def test_a_missing_training_stage_is_one_line(monkeypatch):
    monkeypatch.setattr(trainer_seam, "TRAINING_PACKAGE", "nim_specdec_lab.draft.no_such_stage")
    monkeypatch.delitem(sys.modules, "nim_specdec_lab.draft.no_such_stage", raising=False)
    with pytest.raises(ConfigError, match="training stage is not installed.*make setup"):
        trainer_seam.installed_trainer()
