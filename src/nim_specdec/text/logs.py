"""Launcher logging: plain or one JSON object per line, with every secret value masked."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Sequence

from nim_specdec.errors import printable
from nim_specdec.text.redact import redact_text

LOGGER = "nim_specdec"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")  # NIM_LOG_LEVEL's values


class _Redact(logging.Filter):
    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = printable(redact_text(record.getMessage(), self.secrets))
        record.args = ()
        return True


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {
                "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
                "level": record.levelname,
                "logger": record.name,
                "message": record.getMessage(),
            }
        )


def setup_logging(level: str, jsonl: bool, secrets: Sequence[str]) -> logging.Logger:
    """`secrets`: the values masked in every line (the secret variables' values, config.host_env)."""
    logger = logging.getLogger(LOGGER)
    logger.handlers.clear()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if jsonl else logging.Formatter("%(levelname)s nim-specdec: %(message)s"))
    handler.addFilter(_Redact(list(secrets)))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    logger.disabled = False  # a library's logging.config (disable_existing_loggers) must not silence the launcher
    if jsonl:
        # What a library logs or warns (at import, too: backends are imported after this) goes through the
        # same JSON handler, instead of Python's plain last-resort line or `UserWarning: ...` text.
        root = logging.getLogger()
        root.handlers = [handler]
        root.setLevel(logging.WARNING)
        logging.captureWarnings(True)
    return logger


def error_line(text: str, secrets: Sequence[str]) -> None:
    """One line on stderr, with every value of `secrets` (the secret variables' values, read by the caller at
    its process's edge), URI credentials and control characters masked."""
    print(printable(redact_text(text, secrets)), file=sys.stderr)
