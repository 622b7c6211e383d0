"""Building a FetchContext from the process environment (the imperative edge; the rest takes a mapping)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from nim_specdec.fetchers.base import FetchContext
from nim_specdec.fetchers.tuning import truthy

DEFAULT_CACHE = "/opt/nim/.cache"


def cache_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("NIM_CACHE_PATH") or DEFAULT_CACHE)


_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def stderr_logger(env: Mapping[str, str]) -> Callable[[str], None]:
    """The launcher's own log format (plain, or JSON lines with NIM_JSONL_LOGGING=1; secrets masked)."""
    from nim_specdec.launch.logs import setup_logging

    level = (env.get("NIM_LOG_LEVEL") or "INFO").upper()
    return setup_logging(level if level in _LEVELS else "INFO", truthy(env.get("NIM_JSONL_LOGGING")), env).info


def context_from_env(env: Mapping[str, str], log: Callable[[str], None] | None = None) -> FetchContext:
    """NIM_CACHE_PATH, and NIM_DISABLE_MODEL_DOWNLOAD for cache-only (hf:// also honours HF_HUB_OFFLINE)."""
    return FetchContext(
        env=dict(env),
        cache_dir=cache_dir(env),
        offline=truthy(env.get("NIM_DISABLE_MODEL_DOWNLOAD")),
        log=log or stderr_logger(env),
    )
