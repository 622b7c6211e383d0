"""The download section of the settings (pure: the caller passes the mapping; config.settings holds the rest).

Each variable's default, range and meaning is declared in config.variables (docs/sources.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.config import variables as var
from nim_specdec.config.env_values import _TRUE, parse_bool, read_choice, read_number
from nim_specdec.errors import ConfigError


def _default(name: str) -> Any:
    return var.TABLE[name].default


@dataclass(frozen=True)
class DownloadSettings:
    # The declared defaults (what an empty environment gives).
    timeout: float = _default(var.DOWNLOAD_TIMEOUT)
    retries: int = _default(var.DOWNLOAD_RETRIES)
    concurrency: int = _default(var.DOWNLOAD_CONCURRENCY)
    chunk_bytes: int = _default(var.DOWNLOAD_CHUNK_MB) * 1024 * 1024
    verify_checksums: bool = _default(var.DOWNLOAD_VERIFY) == "checksum"
    lock_timeout: float = _default(var.CACHE_LOCK_TIMEOUT)
    progress_interval: float = _default(var.PROGRESS_INTERVAL)
    s3_anonymous: bool = _default(var.S3_ANONYMOUS)
    s5cmd: str = _default(var.S5CMD)  # "auto" | "on" | "off"
    deadline: float = _default(var.DOWNLOAD_DEADLINE)  # seconds for one source's download in all; 0: none
    min_rate: float = _default(var.DOWNLOAD_MIN_RATE_KB) * 1024.0  # bytes/s averaged over 4 x timeout; 0: none
    hf_resolve_timeout: float = _default(var.HF_RESOLVE_TIMEOUT)  # seconds to ask for a branch's commit, cache held
    hf_branch_follow: float = _default(var.HF_BRANCH_FOLLOW)  # seconds a branch's resolved commit is followed
    # NIM_DOWNLOAD_TIMEOUT was set: only then does it replace the timeout a client library reads itself.
    timeout_given: bool = False


# Unlike parse_bool, an empty value is not "off" here: it means the default, auto.
_OFF = {"0", "false", "no", "off"}


def _s5cmd_choice(raw: str) -> str:
    value = raw.strip().lower()
    if value in ("", "auto"):
        return "auto"
    if value in _TRUE:
        return "on"
    if value in _OFF:
        return "off"
    raise ConfigError(
        var.S5CMD, f"invalid value {raw.strip()[:40]!r}", "use auto (default), 1 (require s5cmd) or 0 (boto3)"
    )


def download_settings(env: Mapping[str, str]) -> DownloadSettings:
    return DownloadSettings(
        timeout=read_number(env, var.DOWNLOAD_TIMEOUT),
        retries=int(read_number(env, var.DOWNLOAD_RETRIES, whole=True)),
        concurrency=int(read_number(env, var.DOWNLOAD_CONCURRENCY, whole=True)),
        chunk_bytes=int(read_number(env, var.DOWNLOAD_CHUNK_MB, whole=True)) * 1024 * 1024,
        verify_checksums=read_choice(env, var.DOWNLOAD_VERIFY) == "checksum",
        lock_timeout=read_number(env, var.CACHE_LOCK_TIMEOUT),
        progress_interval=read_number(env, var.PROGRESS_INTERVAL),
        s3_anonymous=bool(parse_bool(env, var.S3_ANONYMOUS)),
        s5cmd=_s5cmd_choice(env.get(var.S5CMD, "")),
        deadline=read_number(env, var.DOWNLOAD_DEADLINE),
        min_rate=read_number(env, var.DOWNLOAD_MIN_RATE_KB) * 1024,
        hf_resolve_timeout=read_number(env, var.HF_RESOLVE_TIMEOUT),
        hf_branch_follow=read_number(env, var.HF_BRANCH_FOLLOW),
        timeout_given=var.DOWNLOAD_TIMEOUT in env,
    )
