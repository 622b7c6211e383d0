"""Building a FetchContext from the parsed settings (the one parser of NIM_* variables), so `download` and
`cache ls` accept and refuse exactly what `plan` and `serve` do."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from nim_specdec.config import variables as var
from nim_specdec.config.settings import Settings
from nim_specdec.fetchers.base import FetchContext
from nim_specdec.fetchers.cache import CacheLayout
from nim_specdec.files.trust import open_to_others_reason, path_foreign_reason


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
        trust_shared=settings.cache_trust_shared,
        warn=warn,
    )


def shared_trust_warning(ctx: FetchContext) -> str | None:
    """The one warning of every start where the platform vouches for the cache volume (NIM_CACHE_TRUST_SHARED):
    what the launcher no longer checks there, and why it would have refused the volume; None without it."""
    if not ctx.trust_shared:
        return None
    sources = CacheLayout.under(ctx.cache_dir).root
    reason = open_to_others_reason(ctx.cache_dir) or _owner_reason(sources)
    why = f"without it the volume is refused: {reason}" if reason else "the volume would be trusted without it"
    return (
        f"{var.CACHE_TRUST_SHARED}=1: using the cache at {ctx.cache_dir} whoever wrote it ({why}); only this "
        "workload's pods may mount it; prefer the volume fixes of docs/deploy.md and unset the variable"
    )


def _owner_reason(sources) -> str | None:
    reason = path_foreign_reason(sources)
    return None if reason in (None, "does not exist") else f"{sources} {reason}"


def stderr_logger(settings: Settings) -> Callable[[str], None]:
    """The launcher's own log format (plain, or JSON lines with NIM_JSONL_LOGGING=1; secrets masked)."""
    return stderr_loggers(settings)[0]


def stderr_loggers(settings: Settings) -> tuple[Callable[[str], None], Callable[[str], None]]:
    """(info, warning) in the launcher's own log format."""
    from nim_specdec.text.logs import setup_logging  # noqa: PLC0415 - logging: +4 modules (~6 ms) on every parser build

    logger = setup_logging(settings.log_level, settings.jsonl_logging, settings.host.secrets)
    return logger.info, logger.warning
