"""Removing compile-cache keys no server has used for a while: `nim-specdec cache prune`.

Every vLLM build, model and configuration gets its own <NIM_CACHE_PATH>/compile/<key>/ (config/
compile_cache.py), so a volume that has served many of them keeps every old key. The writer of a key
touches its lock file at each start (compile_cache_claim.claim), so the lock's mtime is when the key
was last used; a key whose lock is held belongs to a running server and is never touched.

A key is removed by taking its lock, renaming the directory to a hidden name (atomic: a server starting
meanwhile finds no key and compiles into a fresh one), releasing the lock, then deleting the renamed
tree. Nothing is followed through a link: entries are judged with lstat, the lock is opened with
O_NOFOLLOW, and shutil.rmtree unlinks links without entering them. compile/ itself must pass the same
ownership rule as at start, or nothing under it is touched.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from nim_specdec.common.disk_usage import tree_size
from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec.launch.compile_cache_claim import LOCK, untrusted_reason

_TRASH = ".prune-"  # a renamed key on its way out; left over only if a prune was killed mid-delete


@dataclass(frozen=True)
class KeyState:
    key: str
    size_bytes: int
    last_used: float  # seconds since the epoch (the lock's mtime, else the directory's)
    action: str  # "removed", "would remove", "kept: used recently", "kept: in use", "kept: a link or not a directory"


def prune(base: Path, older_than_s: float, now: float, dry_run: bool = False) -> list[KeyState]:
    """Each key under `base` (<NIM_CACHE_PATH>/compile) and what was done with it."""
    if not base.exists():
        return []
    problem = untrusted_reason(base)
    if problem:
        raise ConfigError(
            var.CACHE_PATH,
            f"{base} {problem}; nothing under it was removed",
            "make it owned by this user and writable by it only",
        )
    states = []
    for entry in sorted(os.scandir(base), key=lambda e: e.name):
        if entry.name.startswith(_TRASH) and entry.is_dir(follow_symlinks=False) and not dry_run:
            shutil.rmtree(entry.path, ignore_errors=True)
            continue
        if entry.name.startswith("."):
            continue
        if not entry.is_dir(follow_symlinks=False):
            states.append(
                KeyState(entry.name, entry.stat(follow_symlinks=False).st_size, 0.0, "kept: a link or not a directory")
            )
            continue
        states.append(_prune_key(Path(entry.path), older_than_s, now, dry_run))
    return states


def _prune_key(path: Path, older_than_s: float, now: float, dry_run: bool) -> KeyState:
    size = tree_size(path)
    try:
        # Read-only and non-blocking: a FIFO planted as the lock must not block, a folder must open to be judged.
        fd = os.open(path / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        fd = None  # never claimed by a writer (or made by an older launcher): the directory's own time
    except OSError as err:
        if err.errno != errno.ELOOP:
            return KeyState(path.name, size, 0.0, f"kept: its lock cannot be opened ({err.strerror})")
        return KeyState(path.name, size, 0.0, "kept: a link or not a directory")
    if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return KeyState(path.name, size, 0.0, "kept: its lock is not a regular file")
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return KeyState(path.name, size, os.fstat(fd).st_mtime, "kept: in use")
                raise
        last_used = os.fstat(fd).st_mtime if fd is not None else os.lstat(path).st_mtime
        if now - last_used < older_than_s:
            return KeyState(path.name, size, last_used, "kept: used recently")
        if dry_run:
            return KeyState(path.name, size, last_used, "would remove")
        trash = path.with_name(f"{_TRASH}{path.name}-{os.getpid()}")
        os.rename(path, trash)
    finally:
        if fd is not None:
            os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    return KeyState(path.name, size, last_used, "removed")
