"""The download section of the settings (pure: the caller passes the mapping; config.settings holds the rest).

NIM_DOWNLOAD_TIMEOUT       seconds a connection or a read may stall before it fails (default 30)
NIM_DOWNLOAD_RETRIES       whole-download retries after a transient failure (default 3)
NIM_DOWNLOAD_CONCURRENCY   parallel transfers (files and ranged parts; default 10)
NIM_DOWNLOAD_CHUNK_MB      part size for ranged downloads of big files (default 8)
NIM_DOWNLOAD_VERIFY        "checksum" (default) or "size": what is checked before an entry is accepted
NIM_DOWNLOAD_DEADLINE      seconds one source's download may take in all (default 86400; 0 = none)
NIM_DOWNLOAD_MIN_RATE_KB   KiB/s a download must average over 4 x NIM_DOWNLOAD_TIMEOUT (default 16; 0 = none)
NIM_CACHE_LOCK_TIMEOUT     seconds to wait for another launcher's download (default 7200; 0 = no limit)
NIM_PROGRESS_INTERVAL      seconds between progress log lines when not on a terminal (default 5)
NIM_S3_ANONYMOUS           1: unsigned S3 requests (public buckets), no credential look-up
NIM_S5CMD                  s3:// client: "auto" (default: s5cmd when installed, else boto3), 1 (s5cmd,
                           required), 0 (boto3's transfer manager)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from nim_specdec.config.env_values import _TRUE, parse_bool
from nim_specdec.errors import ConfigError


@dataclass(frozen=True)
class DownloadSettings:
    timeout: float = 30.0
    retries: int = 3
    concurrency: int = 10
    chunk_bytes: int = 8 * 1024 * 1024
    verify_checksums: bool = True
    lock_timeout: float = 7200.0
    progress_interval: float = 5.0
    s3_anonymous: bool = False
    s5cmd: str = "auto"  # "auto" | "on" | "off"
    deadline: float = 86400.0  # seconds for one source's download in all; 0: none
    min_rate: float = 16 * 1024.0  # bytes/s averaged over 4 x timeout; 0: none


def _number(env: Mapping[str, str], name: str, default: float, minimum: float, maximum: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    fix = f"set a number from {minimum:g} to {maximum:g}"
    try:
        value = float(raw) if len(raw) <= 32 else math.nan
    except ValueError:
        raise ConfigError(name, f"{raw[:40]!r} is not a number", fix) from None
    if not math.isfinite(value):
        raise ConfigError(name, f"{raw[:40]!r} is not a finite number", fix)
    if not minimum <= value <= maximum:
        raise ConfigError(name, f"{raw!r} is out of range", fix)
    return value


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
        "NIM_S5CMD", f"invalid value {raw.strip()[:40]!r}", "use auto (default), 1 (require s5cmd) or 0 (boto3)"
    )


def _whole(env: Mapping[str, str], name: str, default: int, minimum: int, maximum: int) -> int:
    value = _number(env, name, default, minimum, maximum)
    if not float(value).is_integer():
        raise ConfigError(
            name, f"{env.get(name, '').strip()!r} is not a whole number", f"set an integer from {minimum} to {maximum}"
        )
    return int(value)


def download_settings(env: Mapping[str, str]) -> DownloadSettings:
    verify = env.get("NIM_DOWNLOAD_VERIFY", "checksum").strip().lower() or "checksum"
    if verify not in ("checksum", "size"):
        raise ConfigError("NIM_DOWNLOAD_VERIFY", f"{verify[:40]!r} is not supported", "use 'checksum' or 'size'")
    return DownloadSettings(
        timeout=_number(env, "NIM_DOWNLOAD_TIMEOUT", 30.0, 0.1, 86400),
        retries=_whole(env, "NIM_DOWNLOAD_RETRIES", 3, 0, 100),
        concurrency=_whole(env, "NIM_DOWNLOAD_CONCURRENCY", 10, 1, 256),
        chunk_bytes=_whole(env, "NIM_DOWNLOAD_CHUNK_MB", 8, 1, 4096) * 1024 * 1024,
        verify_checksums=verify == "checksum",
        lock_timeout=_number(env, "NIM_CACHE_LOCK_TIMEOUT", 7200.0, 0, 7 * 86400),
        progress_interval=_number(env, "NIM_PROGRESS_INTERVAL", 5.0, 0.1, 86400),
        s3_anonymous=parse_bool(env, "NIM_S3_ANONYMOUS"),
        s5cmd=_s5cmd_choice(env.get("NIM_S5CMD", "")),
        deadline=_number(env, "NIM_DOWNLOAD_DEADLINE", 86400.0, 0, 30 * 86400),
        min_rate=_number(env, "NIM_DOWNLOAD_MIN_RATE_KB", 16.0, 0, 10**7) * 1024,
    )
