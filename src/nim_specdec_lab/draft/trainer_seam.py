"""The seam between this flow and the training stage (package nim_specdec_lab.draft.training).

The contract: `train_draft(job, on_progress) -> result` trains an EAGLE3 draft with the library from the
training rows (draft.regenerate) and exports it; `export_untrained(job) -> Path` exports the same draft with
its initial weights, the measurement's reference. The job's fields are the contract's; `installed_trainer`
builds the training stage's own TrainJob from them, so the flow never depends on more than these names.
Errors the stage raises are LauncherErrors (one line, an exit code) and pass through unchanged.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Protocol

from nim_specdec.errors import ConfigError

TRAINING_PACKAGE = "nim_specdec_lab.draft.training"
# Where the stage keeps what it exposes: train_draft and export_untrained, TrainJob, its pre-training checks.
SUPERVISOR, JOB, CHECKS = "supervisor", "job", "checks"


@dataclass(frozen=True)
class DraftJob:
    target_dir: Path
    data_file: Path  # the training rows, JSONL
    work_dir: Path  # hidden states and checkpoints; a rerun resumes from what is there
    output_dir: Path  # where the export goes (a staging folder: the flow renames it into place)
    seed: int
    steps: int | None  # None: the stage's default
    num_speculative_tokens: int
    aux_layer_ids: tuple[int, ...] | None
    max_seq_len: int
    learning_rate: float


@dataclass(frozen=True)
class Trained:
    """What the flow reads from the stage's result."""

    draft_dir: Path
    steps: int
    final_loss: float | None
    tokens: int
    seconds: float
    hidden_states_path: str  # which way the hidden states were obtained (the library's vLLM path or other)
    library: str  # name and version
    aux_layer_ids: tuple[int, ...] | None = None  # the layers the head reads, as the stage chose them


Progress = Callable[[Any], None]


class Trainer(Protocol):
    def check_target(self, target: Any, where: str, aux: tuple[int, ...] | None) -> None:
        """The stage's own refusal of a target (or auxiliary layers) it cannot train a head for: before any server."""

    def train(self, job: DraftJob, on_progress: Progress) -> Trained: ...

    def export_untrained(self, job: DraftJob) -> Trained: ...


def _field(result: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(result, dict) and name in result:
            return result[name]
        if hasattr(result, name):
            return getattr(result, name)
    return default


def read_result(result: Any) -> Trained:
    """The stage's TrainResult as the flow's Trained (its field names as the contract words them)."""
    library = _field(result, "library", "library_name", default="")
    version = _field(result, "library_version", "version", default="")
    aux = _field(result, "aux_layer_ids")
    return Trained(
        draft_dir=Path(_field(result, "draft_dir", "exported_dir", "output_dir")),
        steps=int(_field(result, "steps", default=0)),
        final_loss=_field(result, "final_loss", "loss"),
        tokens=int(_field(result, "tokens_trained", "tokens", default=0)),
        seconds=float(_field(result, "seconds", default=0.0)),
        hidden_states_path=str(_field(result, "hidden_states", "hidden_states_path", default="")),
        library=f"{library} {version}".strip(),
        aux_layer_ids=tuple(int(a) for a in aux) if aux is not None else None,
    )


class InstalledTrainer:
    """The training stage as installed: its TrainJob built from the DraftJob's fields it has (a field left None
    takes the stage's default)."""

    def __init__(self, supervisor: Any, job_module: Any, checks: Any = None) -> None:
        self.supervisor, self.job_module, self.checks = supervisor, job_module, checks

    def _job(self, job: DraftJob) -> Any:
        known = {f.name for f in fields(self.job_module.TrainJob)}
        given = {k: v for k, v in asdict(job).items() if k in known and v is not None}
        given["aux_layer_ids"] = tuple(job.aux_layer_ids) if job.aux_layer_ids is not None else None
        return self.job_module.TrainJob(**given)

    def check_target(self, target: Any, where: str, aux: tuple[int, ...] | None) -> None:
        if self.checks is not None:
            shape = self.checks.target_shape(target, where)
            self.checks.choose_aux_layers(shape.layers, aux, where)

    def train(self, job: DraftJob, on_progress: Progress) -> Trained:
        return read_result(self.supervisor.train_draft(self._job(job), on_progress))

    def export_untrained(self, job: DraftJob) -> Trained:
        return read_result(self.supervisor.export_untrained(self._job(job)))


def _stage_module(name: str) -> Any:
    return importlib.import_module(f"{TRAINING_PACKAGE}.{name}")


def installed_trainer() -> Trainer:
    try:
        supervisor, job = _stage_module(SUPERVISOR), _stage_module(JOB)
    except ImportError as err:
        raise ConfigError(
            "draft train",
            f"the training stage is not installed ({err.name or TRAINING_PACKAGE} cannot be imported)",
            "run make setup (it installs the training library's virtualenv)",
        ) from None
    try:
        checks = _stage_module(CHECKS)
    except ImportError:
        checks = None
    return InstalledTrainer(supervisor, job, checks)
