"""Building a FetchContext from the process environment (the imperative edge; the rest takes a mapping).

The values come from config.settings, the one parser of NIM_* variables, so `download` and `cache ls`
accept and refuse exactly what `plan` and `serve` do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from nim_specdec.config.settings import Settings, parse_settings
from nim_specdec.fetchers.base import FetchContext


def cache_dir(env: Mapping[str, str]) -> Path:
    return Path(parse_settings(env).cache_path)


def stderr_logger(settings: Settings, env: Mapping[str, str]) -> Callable[[str], None]:
    """The launcher's own log format (plain, or JSON lines with NIM_JSONL_LOGGING=1; secrets masked)."""
    from nim_specdec.common.logs import setup_logging  # noqa: PLC0415

    return setup_logging(settings.log_level, settings.jsonl_logging, env).info


def context_from_env(env: Mapping[str, str], log: Callable[[str], None] | None = None) -> FetchContext:
    """NIM_CACHE_PATH, and NIM_DISABLE_MODEL_DOWNLOAD for cache-only (hf:// also honours HF_HUB_OFFLINE)."""
    settings = parse_settings(env)
    return FetchContext(
        env=dict(env),
        cache_dir=Path(settings.cache_path),
        offline=settings.disable_download,
        log=log or stderr_logger(settings, env),
    )
