"""Building a FetchContext from the parsed settings (the one parser of NIM_* variables), so `download` and
`cache ls` accept and refuse exactly what `plan` and `serve` do."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from nim_specdec.config.settings import Settings
from nim_specdec.fetchers.base import FetchContext


def fetch_context(
    settings: Settings, log: Callable[[str], None] = lambda msg: None, warn: Callable[[str], None] | None = None
) -> FetchContext:
    """NIM_CACHE_PATH, NIM_DISABLE_MODEL_DOWNLOAD for cache-only (hf:// also honours HF_HUB_OFFLINE), the
    download settings, and the environment the backends read their credentials and endpoints from."""
    return FetchContext(
        env=settings.environ,
        cache_dir=Path(settings.cache_path),
        offline=settings.disable_download,
        log=log,
        download=settings.download,
        hf_hub_offline=settings.host.hf_hub_offline,
        secrets=settings.host.secrets,
        warn=warn,
    )


def stderr_logger(settings: Settings) -> Callable[[str], None]:
    """The launcher's own log format (plain, or JSON lines with NIM_JSONL_LOGGING=1; secrets masked)."""
    return stderr_loggers(settings)[0]


def stderr_loggers(settings: Settings) -> tuple[Callable[[str], None], Callable[[str], None]]:
    """(info, warning) in the launcher's own log format."""
    from nim_specdec.text.logs import setup_logging  # noqa: PLC0415

    logger = setup_logging(settings.log_level, settings.jsonl_logging, settings.host.secrets)
    return logger.info, logger.warning
