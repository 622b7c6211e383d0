"""train_draft: supervises the training worker, a subprocess in the draft virtualenv: streams its progress, exports
atomically.

Cheap checks first (the interpreter, the target's shape, the data, the output path, free space), then the worker
(worker.py in the draft venv). The worker trains into work_dir/checkpoints, resuming from the newest complete
checkpoint there, and exports into a staging directory inside work_dir; the export is checked against the target
with the launcher's pre-flight and only then renamed to output_dir, so a partial export is never at that path.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Mapping

from nim_specdec.errors import ConfigError
from nim_specdec.preflight.checkpoint import read_checkpoint
from nim_specdec.preflight.config_file import read_model_config
from nim_specdec_lab.draft.training import checks
from nim_specdec_lab.draft.training.errors import (
    VENV_VARIABLE,
    BadTrainingDataError,
    DraftVenvMissingError,
    TrainingFailedError,
    UnsupportedTargetError,
)
from nim_specdec_lab.draft.training.job import HIDDEN_STATES_ONLINE_HF, Progress, TrainJob, TrainResult

DEFAULT_VENV_PYTHON = Path(".venv-draft") / "bin" / "python"
PROVENANCE_FILE = "draft-training.json"
WORKER = Path(__file__).with_name("worker.py")
_VENV_FIX = (
    f"run `make draft-venv` in the checkout, or set {VENV_VARIABLE} to the python of a venv with nvidia-modelopt"
)
_MAX_DATA_LINE = 4 * 2**20


def draft_python(environ: Mapping[str, str]) -> Path:
    """The draft venv's interpreter: DRAFT_TRAIN_PYTHON, else .venv-draft/bin/python in the current directory."""
    value = environ.get(VENV_VARIABLE, "")
    python = Path(value) if value else Path.cwd() / DEFAULT_VENV_PYTHON
    where = f"{VENV_VARIABLE}={value}" if value else str(python)
    if not python.is_file() or not os.access(python, os.X_OK):
        raise DraftVenvMissingError(where, "no python interpreter there", _VENV_FIX)
    probe = subprocess.run(
        [str(python), "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('modelopt') is None)"],
        capture_output=True,
        timeout=60,
    )
    if probe.returncode != 0:
        raise DraftVenvMissingError(where, "that python has no nvidia-modelopt", _VENV_FIX)
    return python


def count_training_tokens(path: Path) -> int:
    """Prompt plus output tokens over the usable lines; BadTrainingDataError naming the first bad line."""
    where = str(path)
    if not path.is_file():
        raise BadTrainingDataError(where, "no such file", "pass the regenerated requests file (JSONL)")
    tokens = usable = 0
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            if len(raw) > _MAX_DATA_LINE:
                raise BadTrainingDataError(f"{where}:{number}", "line longer than 4 MiB", "one request per line")
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
                prompt, output = row["prompt_token_ids"], row["output_token_ids"]
                ok = all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in [*prompt, *output])
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                raise BadTrainingDataError(
                    f"{where}:{number}",
                    "not a JSON object with prompt_token_ids and output_token_ids lists of token ids",
                    "regenerate the requests with return_token_ids",
                )
            if prompt and output:
                usable += 1
                tokens += len(prompt) + len(output)
    if not usable:
        raise BadTrainingDataError(where, "no request with both prompt and output tokens", "regenerate the requests")
    return tokens


def _spec(job: TrainJob, aux: tuple[int, ...], stage: Path) -> dict:
    return {
        "target_dir": str(job.target_dir),
        "data_file": str(job.data_file),
        "checkpoint_dir": str(job.work_dir / "checkpoints"),
        "export_stage_dir": str(stage),
        "seed": job.seed,
        "max_steps": job.steps,
        "num_speculative_tokens": job.num_speculative_tokens,
        "aux_layer_ids": list(aux),
        "max_seq_len": job.max_seq_len,
        "learning_rate": job.learning_rate,
        "batch_size": job.batch_size,
        "save_steps": job.save_steps,
    }


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:300] if lines else ""


def _run_worker(python: Path, spec_file: Path, log: Path, on_progress: Callable[[Progress], None]) -> dict:
    """Runs the worker to its end; the "done" event's fields, or the typed error its "error" event names."""
    done: dict = {}
    error: dict = {}
    start: dict = {}
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONPATH", None)  # the worker imports only the draft venv's packages
    with (
        log.open("ab") as stderr,
        subprocess.Popen(
            [str(python), str(WORKER), str(spec_file)], stdout=subprocess.PIPE, stderr=stderr, env=env
        ) as proc,
    ):
        assert proc.stdout is not None
        for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # the Trainer prints its own log dicts on stdout
            if not isinstance(event, dict):
                continue
            kind = event.get("event")
            if kind == "progress":
                on_progress(
                    Progress(
                        int(event["step"]),
                        int(event["max_steps"]),
                        float(event["loss"]),
                        float(event["tokens_per_second"]),
                        float(event["seconds_left"]),
                    )
                )
            elif kind == "start":
                start = event
            elif kind == "done":
                done = event
            elif kind == "error":
                error = event
        code = proc.wait()
    if error.get("kind") == "unsupported-target":
        raise UnsupportedTargetError(str(spec_file.parent), str(error.get("message")), checks._OTHER_TARGET)
    if error.get("kind") == "bad-data":
        raise BadTrainingDataError(str(spec_file.parent), str(error.get("message")), "regenerate the requests")
    if code != 0 or not done:
        reason = error.get("message") or _last_line(log) or f"exit status {code}"
        raise TrainingFailedError(
            str(log),
            f"the training worker failed ({reason})",
            "read that log; rerun to resume from the last checkpoint",
        )
    done["resumed_from"] = start.get("resume_from")
    return done


def _publish(stage: Path, output_dir: Path) -> None:
    """Rename the checked export into place; across filesystems, copy next to output_dir first, then rename."""
    os.chmod(stage, 0o755)
    for item in stage.iterdir():
        os.chmod(item, 0o644)
    try:
        os.rename(stage, output_dir)
        return
    except OSError as err:
        if err.errno != 18:  # EXDEV: another filesystem
            raise
    sibling = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))
    try:
        shutil.copytree(stage, sibling, dirs_exist_ok=True)
        os.rename(sibling, output_dir)
    except BaseException:
        shutil.rmtree(sibling, ignore_errors=True)
        raise
    shutil.rmtree(stage, ignore_errors=True)


def train_draft(
    job: TrainJob,
    on_progress: Callable[[Progress], None] = lambda progress: None,
    *,
    environ: Mapping[str, str] | None = None,
) -> TrainResult:
    """Train (or, with job.steps == 0, only initialize) the EAGLE3 head and export it to job.output_dir."""
    python = draft_python(os.environ if environ is None else environ)
    target_where = str(job.target_dir)
    target_config = read_model_config(job.target_dir, target_where)
    shape = checks.target_shape(target_config, target_where)
    aux = checks.choose_aux_layers(shape.layers, job.aux_layer_ids, target_where)
    if job.steps < 0 or job.batch_size < 1 or job.save_steps < 1 or job.max_seq_len < 2:
        raise ConfigError("train job", "steps, batch size, save steps or max_seq_len out of range", "fix the job")
    if job.steps > 0:
        count_training_tokens(job.data_file)
    if job.output_dir.exists() or job.output_dir.is_symlink():
        raise ConfigError(str(job.output_dir), "already exists", "choose a new output directory or remove it")
    job.work_dir.mkdir(parents=True, exist_ok=True)
    job.output_dir.parent.mkdir(parents=True, exist_ok=True)
    weights = read_checkpoint(job.target_dir, target_where)
    head = checks.head_parameters(shape, len(aux))
    checks.check_disk(
        shutil.disk_usage(job.work_dir).free,
        checks.work_bytes(weights.total_bytes if weights else 0, head),
        str(job.work_dir),
    )
    for stale in job.work_dir.glob("export-*"):  # staging dirs of a killed run: ours, never published
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale)
    stage = Path(tempfile.mkdtemp(prefix="export-", dir=job.work_dir))
    try:
        spec_file = job.work_dir / "train-spec.json"
        spec_file.write_text(json.dumps(_spec(job, aux, stage), indent=2, sort_keys=True) + "\n")
        done = _run_worker(python, spec_file, job.work_dir / "worker.log", on_progress)
        draft_config = read_model_config(stage, "exported draft")
        checks.check_export(draft_config, read_checkpoint(stage, "exported draft"), target_config, "exported draft")
        resumed = done.get("resumed_from")
        result = TrainResult(
            draft_dir=job.output_dir,
            steps=int(done["steps"]),
            final_loss=None if done.get("final_loss") is None else float(done["final_loss"]),
            tokens_trained=int(done["tokens"]),
            seconds=float(done["seconds"]),
            hidden_states=HIDDEN_STATES_ONLINE_HF,
            library=str(done["library"]),
            library_version=str(done["library_version"]),
            aux_layer_ids=aux,
            resumed_from_step=int(resumed.removeprefix("checkpoint-")) if resumed else None,
        )
        provenance = {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(result).items()}
        provenance.update(seed=job.seed, trained=job.steps > 0)
        (stage / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n")
        _publish(stage, job.output_dir)
        return result
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def export_untrained(job: TrainJob, *, environ: Mapping[str, str] | None = None) -> TrainResult:
    """The same head, same seed and configuration, exported with no training step: the baseline to compare."""
    return train_draft(dataclasses.replace(job, steps=0), environ=environ)
