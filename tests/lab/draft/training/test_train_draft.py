"""train_draft with the real library in the draft venv: a few steps on the learnable demo target, an untrained
export of the same head, a resume after a kill, and the typed errors. Needs the draft venv (`make draft-venv`,
found through DRAFT_TRAIN_PYTHON or .venv-draft/bin/python): without it these tests fail, they are not skipped."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file
from training_fixtures import draft_environ, small_job

from nim_specdec.errors import EXIT_CONFIG
from nim_specdec_lab.demo_model import LEARNABLE_AUX_LAYERS
from nim_specdec_lab.draft.training.errors import (
    VENV_VARIABLE,
    BadTrainingDataError,
    DraftVenvMissingError,
    UnsupportedTargetError,
)
from nim_specdec_lab.draft.training.job import HIDDEN_STATES_ONLINE_HF
from nim_specdec_lab.draft.training.supervisor import PROVENANCE_FILE, export_untrained, train_draft

SRC = Path(__file__).resolve().parents[4] / "src"


@pytest.fixture(scope="module")
def trained(learnable, requests_file, tmp_path_factory):
    root = tmp_path_factory.mktemp("trained")
    seen = []
    result = train_draft(small_job(learnable, requests_file, root), seen.append, environ=draft_environ())
    return root, result, seen


def test_a_few_steps_train_and_export_a_draft_the_target_fits(trained):
    root, result, seen = trained
    assert result.draft_dir == root / "draft" and result.steps == 3 and result.tokens_trained > 0
    assert result.hidden_states == HIDDEN_STATES_ONLINE_HF and result.library == "nvidia-modelopt"
    assert result.library_version == "0.47.0" and result.aux_layer_ids == LEARNABLE_AUX_LAYERS
    assert result.final_loss is not None and result.final_loss > 0 and result.resumed_from_step is None
    assert [p.step for p in seen] == [1, 2, 3] and all(p.max_steps == 3 for p in seen)
    assert seen[-1].seconds_left == 0 and all(p.tokens_per_second > 0 and p.loss > 0 for p in seen)
    config = json.loads((result.draft_dir / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLMEagle3"]
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == list(LEARNABLE_AUX_LAYERS)
    # the V2 runner reads only the top-level key: without it a GPU server drafts from its default layers
    assert config["eagle_aux_hidden_state_layer_ids"] == list(LEARNABLE_AUX_LAYERS)
    assert (config["vocab_size"], config["draft_vocab_size"], config["target_hidden_size"]) == (330, 330, 128)
    weights = load_file(str(result.draft_dir / "model.safetensors"))
    assert tuple(weights["fc.weight"].shape) == (128, 3 * 128)
    provenance = json.loads((result.draft_dir / PROVENANCE_FILE).read_text())
    assert provenance["trained"] is True and provenance["steps"] == 3 and provenance["library"] == "nvidia-modelopt"
    assert not [p for p in (root / "work").iterdir() if p.name.startswith("export-")], "a staging dir was left"


def test_the_untrained_export_is_the_same_head_before_its_first_step(trained, learnable, requests_file, tmp_path):
    _, result, _ = trained
    environ = draft_environ()
    first = export_untrained(small_job(learnable, requests_file, tmp_path / "a"), environ=environ)
    second = export_untrained(small_job(learnable, requests_file, tmp_path / "b"), environ=environ)
    assert first.steps == 0 and first.final_loss is None and first.tokens_trained == 0
    untrained = load_file(str(first.draft_dir / "model.safetensors"))
    again = load_file(str(second.draft_dir / "model.safetensors"))
    after = load_file(str(result.draft_dir / "model.safetensors"))
    assert untrained.keys() == after.keys() == again.keys()
    assert all((untrained[k] == again[k]).all() for k in untrained), "the same seed gives the same initial head"
    assert any(not (untrained[k] == after[k]).all() for k in untrained), "training changed no weight"
    trained_config = json.loads((result.draft_dir / "config.json").read_text())
    assert json.loads((first.draft_dir / "config.json").read_text()) == trained_config
    assert json.loads((first.draft_dir / PROVENANCE_FILE).read_text())["trained"] is False


_TRAIN_IN_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from nim_specdec_lab.draft.training.job import TrainJob
    from nim_specdec_lab.draft.training.supervisor import train_draft
    fields = json.loads(sys.argv[1])
    train_draft(TrainJob(**{k: Path(v) if k.endswith(("_dir", "_file")) else v for k, v in fields.items()}))
    """
)


def test_a_killed_run_resumes_from_its_last_complete_checkpoint(learnable, requests_file, tmp_path):
    environ = draft_environ()
    job = small_job(learnable, requests_file, tmp_path, steps=6, save_steps=2)
    fields = {k: str(v) for k, v in vars(job).items() if isinstance(v, Path)}
    fields.update({k: v for k, v in vars(job).items() if not isinstance(v, Path) and k != "aux_layer_ids"})
    child = subprocess.Popen(
        [sys.executable, "-c", _TRAIN_IN_CHILD, json.dumps(fields)],
        env={**environ, "PYTHONPATH": str(SRC)},
        start_new_session=True,  # the worker it starts shares the group: one kill ends both
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    state = job.work_dir / "checkpoints" / "checkpoint-2" / "trainer_state.json"
    try:
        for _ in range(6000):  # bounded: 10 minutes of 0.1 s waits for the checkpoint's last file
            if state.is_file() or child.poll() is not None:
                break
            time.sleep(0.1)
        assert state.is_file(), f"no checkpoint appeared (child exit {child.poll()})"
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert not job.output_dir.exists(), "a killed run left something at the output path"
    seen = []
    result = train_draft(job, seen.append, environ=environ)
    assert result.resumed_from_step is not None and result.resumed_from_step >= 2
    assert result.steps == 6 and seen[0].step == result.resumed_from_step + 1 and seen[-1].step == 6
    assert (job.output_dir / "model.safetensors").is_file()
    # Run again on the finished work directory: the last checkpoint is exported, no step is trained.
    again = train_draft(dataclasses.replace(job, output_dir=tmp_path / "again"), seen.append, environ=environ)
    assert (again.steps, again.tokens_trained, again.resumed_from_step) == (6, 0, 6) and seen[-1].step == 6
    assert again.final_loss == pytest.approx(result.final_loss)
    first = load_file(str(job.output_dir / "model.safetensors"))
    second = load_file(str(again.draft_dir / "model.safetensors"))
    assert all((first[k] == second[k]).all() for k in first)


def test_a_missing_venv_is_one_line_naming_the_variable_and_the_make_target(learnable, requests_file, tmp_path):
    with pytest.raises(DraftVenvMissingError) as caught:
        train_draft(small_job(learnable, requests_file, tmp_path), environ={VENV_VARIABLE: str(tmp_path / "none")})
    line = caught.value.one_line()
    assert line.startswith(f"{VENV_VARIABLE}={tmp_path / 'none'}: no python interpreter there; run `make draft-venv`")
    assert caught.value.exit_code == EXIT_CONFIG and not (tmp_path / "work").exists()


def test_a_venv_without_the_library_is_named_too(learnable, requests_file, tmp_path):
    with pytest.raises(DraftVenvMissingError, match="that python has no nvidia-modelopt"):
        train_draft(small_job(learnable, requests_file, tmp_path), environ={VENV_VARIABLE: sys.executable})


def test_a_target_the_library_cannot_train_for_is_refused_before_anything_runs(learnable, requests_file, tmp_path):
    target = tmp_path / "gpt2"
    shutil.copytree(learnable, target)
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    with pytest.raises(UnsupportedTargetError, match="model_type 'gpt2' has no EAGLE3 training path"):
        train_draft(small_job(target, requests_file, tmp_path), environ=draft_environ())
    with pytest.raises(UnsupportedTargetError, match=r"auxiliary layers \[0, 1, 2\] do not exist in a 4-layer target"):
        train_draft(small_job(learnable, requests_file, tmp_path, aux_layer_ids=(0, 1, 2)), environ=draft_environ())
    assert not (tmp_path / "work").exists() and not (tmp_path / "draft").exists()


@pytest.mark.parametrize(
    "content, words",
    [
        ("", "no request with both prompt and output tokens"),
        ('{"id": "a", "prompt_token_ids": [1, 2]}\n', ":1: not a JSON object with prompt_token_ids"),
        ('{"prompt_token_ids": [1], "output_token_ids": [-4]}\n', ":1: not a JSON object"),
        ("not json\n", ":1: not a JSON object"),
    ],
)
def test_unusable_training_data_is_one_line_naming_the_file(learnable, tmp_path, content, words):
    data = tmp_path / "requests.jsonl"
    data.write_text(content)
    with pytest.raises(BadTrainingDataError) as caught:
        train_draft(small_job(learnable, data, tmp_path), environ=draft_environ())
    assert caught.value.one_line().startswith(str(data)) and words in caught.value.one_line()


_DISK_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from nim_specdec_lab.draft.training.errors import DiskTooSmallError
    from nim_specdec_lab.draft.training.job import TrainJob
    from nim_specdec_lab.draft.training.supervisor import train_draft
    target, data, small = map(Path, sys.argv[1:4])
    try:
        train_draft(TrainJob(target_dir=target, data_file=data, work_dir=small / "work", output_dir=small / "draft"))
    except DiskTooSmallError as err:
        print(err.one_line())
        sys.exit(err.exit_code)
    """
)


def test_a_work_volume_too_small_for_the_run_is_refused_before_training(learnable, requests_file, tmp_path):
    """A 512 KiB tmpfs in a mount namespace of its own (root, as FINDINGS describes) stands for a full volume."""
    small = tmp_path / "small"
    small.mkdir()
    script = 'mount -t tmpfs -o size=512k tmpfs "$1" && exec "$2" -c "$3" "$4" "$5" "$1"'
    run = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            script,
            "sh",
            str(small),
            sys.executable,
            _DISK_CHILD,
            str(learnable),
            str(requests_file),
        ],
        env={**draft_environ(), "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == EXIT_CONFIG, run.stderr[-2000:]
    assert run.stdout.startswith(f"{small / 'work'}: training needs about ") and "MiB are free" in run.stdout
