"""What the fetch context says at a start: the warning of a cache volume the platform vouches for, and the
launcher's own log lines for a command that downloads (the context itself is made from the parsed settings, the
one parser of NIM_* variables, by launch/stage_inputs.py, so `download` accepts and refuses what `serve` does)."""

from __future__ import annotations

from typing import Callable

from nim_specdec.config import variables as var
from nim_specdec.config.settings import LogFormat
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.volume.cache import CacheLayout
from nim_specdec.files.trust import open_to_others_reason, path_foreign_reason


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


def stderr_loggers(log_format: LogFormat) -> tuple[Callable[[str], None], Callable[[str], None]]:
    """(info, warning) in the launcher's own log format."""
    from nim_specdec.text.logs import setup_logging  # noqa: PLC0415 - logging: +4 modules (~6 ms) on every parser build

    logger = setup_logging(log_format.level, log_format.jsonl, log_format.secrets)
    return logger.info, logger.warning
