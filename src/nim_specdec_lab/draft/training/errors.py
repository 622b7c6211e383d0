"""The training stage's typed errors: each one line naming the input and the fix, with the project's exit codes."""

from __future__ import annotations

from nim_specdec.errors import ConfigError, MaterializeError

VENV_VARIABLE = "DRAFT_TRAIN_PYTHON"


class DraftVenvMissingError(ConfigError):
    """The draft-training virtualenv's interpreter is not there (exit 2)."""


class UnsupportedTargetError(ConfigError):
    """A target whose architecture, layers or vocabulary the library cannot train a head for (exit 2)."""


class DiskTooSmallError(ConfigError):
    """The work directory's filesystem cannot hold what training writes (exit 2)."""


class BadTrainingDataError(ConfigError):
    """The regenerated-requests file has no usable line (exit 2)."""


class TrainingFailedError(MaterializeError):
    """The library failed while training or exporting (exit 3); the message ends with its last log line."""
