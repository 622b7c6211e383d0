"""One downloader per cache entry, across processes and hosts sharing the volume: an OS file lock per entry."""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from nim_specdec.config.download_settings import DownloadSettings
from nim_specdec.errors import MaterializeError, printable
from nim_specdec.fetchers.volume import cache
from nim_specdec.files import trust


@contextmanager
def entry_lock(layout: cache.CacheLayout, name: str, uri: str, settings: DownloadSettings, log) -> Iterator[None]:
    """One downloader per entry across processes and hosts sharing the volume.

    The lock is an OS file lock (flock): the kernel drops it when its holder dies, even by SIGKILL, so
    a killed launcher never blocks the others. NIM_CACHE_LOCK_TIMEOUT bounds the wait for a live but
    stuck holder. The lock file is opened without following links and must be ours.
    """
    fd = trust.open_lock(layout.lock(name), layout.vouched)
    try:
        started = time.monotonic()
        next_message = 0.0
        while not _try_lock(fd):
            waited = time.monotonic() - started
            holder = _read_owner(layout.owner(name))
            if settings.lock_timeout and waited >= settings.lock_timeout:
                raise MaterializeError(
                    uri,
                    f"gave up after waiting {waited:.0f}s for the download held by {holder}",
                    f"remove {layout.lock(name)} if that process is gone, or raise NIM_CACHE_LOCK_TIMEOUT",
                ) from None
            if waited >= next_message:
                log(
                    f"{uri}: waiting for another launcher ({holder}) that is downloading it into the cache ({waited:.0f}s)"  # noqa: E501
                )
                next_message = waited + 5.0
            time.sleep(0.05 if waited < 1 else 0.25)
        _write_owner(layout.owner(name))
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _write_owner(path: Path) -> None:
    try:
        trust.write_replacing(path, f"pid {os.getpid()} on {os.uname().nodename}".encode())
    except OSError:
        pass  # informational only


def _read_owner(path: Path) -> str:
    raw = trust.read_own_file(path, 256)
    text = (raw or b"").decode("utf-8", "replace").strip()
    return printable(text) or "unknown"
