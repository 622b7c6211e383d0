"""Removing compile-cache keys no server has used for a while: `nim-specdec cache prune`.

Every vLLM build, model and configuration gets its own <NIM_CACHE_PATH>/compile/<key>/ (plan/
compile_cache.py), so a volume that has served many of them keeps every old key. The writer of a key
touches its lock file at each start (claim.claim), so the lock's mtime is when the key
was last used; a key whose lock is held belongs to a running server and is never touched.

A key is removed by taking its lock, renaming the directory to a hidden name (atomic: a server starting
meanwhile finds no key and compiles into a fresh one), releasing the lock, then deleting the renamed
tree. Nothing is followed through a link: entries are judged with lstat, the lock is opened with
O_NOFOLLOW, and shutil.rmtree unlinks links without entering them. Every step after the check goes
through directory descriptors (compile/ and each key opened with O_NOFOLLOW), so a folder swapped for a
link between a check and its use is never entered. compile/ itself must pass the same
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

from nim_specdec.config import variables as var
from nim_specdec.errors import ConfigError
from nim_specdec.files.disk_usage import tree_size
from nim_specdec.launch.compile_cache.claim import LOCK, untrusted_reason, untrusted_reason_of

_TRASH = ".prune-"  # a renamed key on its way out; left over only if a prune was killed mid-delete


@dataclass(frozen=True)
class KeyState:
    key: str
    size_bytes: int
    last_used: float  # seconds since the epoch (the lock's mtime, else the directory's)
    action: str  # "removed", "would remove", "kept: used recently", "kept: in use", "kept: a link or not a directory"


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_key(dir_fd: int, name: str) -> int:
    """A key's folder, opened without following a link: what is judged and removed is what was opened."""
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def prune(base: Path, older_than_s: float, now: float, dry_run: bool = False) -> list[KeyState]:
    """Each key under `base` (<NIM_CACHE_PATH>/compile) and what was done with it. compile/ is checked,
    then opened without following a link and compared with what was checked; every later step goes
    through that descriptor, so a compile/ swapped for a link meanwhile is never entered."""
    if not base.exists():
        return []
    problem = untrusted_reason(base)
    if problem:
        raise ConfigError(
            var.CACHE_PATH,
            f"{base} {problem}; nothing under it was removed",
            "make it owned by this user and writable by it only",
        )
    try:
        base_fd = os.open(base, _DIR_FLAGS)
    except OSError as err:
        raise ConfigError(
            var.CACHE_PATH,
            f"{base} changed after it was checked ({err.strerror}); nothing under it was removed",
            "make sure no other user can write the cache volume, then run prune again",
        ) from None
    try:
        problem = untrusted_reason_of(os.fstat(base_fd))
        if problem:
            raise ConfigError(var.CACHE_PATH, f"{base} {problem}; nothing under it was removed", "run prune again")
        return _prune_all(base_fd, older_than_s, now, dry_run)
    finally:
        os.close(base_fd)


def _prune_all(base_fd: int, older_than_s: float, now: float, dry_run: bool) -> list[KeyState]:
    states = []
    with os.scandir(base_fd) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if entry.name.startswith(_TRASH) and entry.is_dir(follow_symlinks=False) and not dry_run:
            shutil.rmtree(entry.name, dir_fd=base_fd, ignore_errors=True)
            continue
        if entry.name.startswith("."):
            continue
        try:
            key_fd = _open_key(base_fd, entry.name)
        except OSError:
            try:
                size = os.lstat(entry.name, dir_fd=base_fd).st_size
            except OSError:
                size = 0
            states.append(KeyState(entry.name, size, 0.0, "kept: a link or not a directory"))
            continue
        try:
            states.append(_prune_key(base_fd, entry.name, key_fd, older_than_s, now, dry_run))
        finally:
            os.close(key_fd)
    return states


def _prune_key(base_fd: int, name: str, key_fd: int, older_than_s: float, now: float, dry_run: bool) -> KeyState:
    size = tree_size(".", dir_fd=key_fd)
    try:
        # Read-only and non-blocking: a FIFO planted as the lock must not block, a folder must open to be judged.
        fd = os.open(LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=key_fd)
    except FileNotFoundError:
        fd = None  # never claimed by a writer (or made by an older launcher): the directory's own time
    except OSError as err:
        if err.errno != errno.ELOOP:
            return KeyState(name, size, 0.0, f"kept: its lock cannot be opened ({err.strerror})")
        return KeyState(name, size, 0.0, "kept: a link or not a directory")
    if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return KeyState(name, size, 0.0, "kept: its lock is not a regular file")
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return KeyState(name, size, os.fstat(fd).st_mtime, "kept: in use")
                raise
        last_used = os.fstat(fd).st_mtime if fd is not None else os.fstat(key_fd).st_mtime
        if now - last_used < older_than_s:
            return KeyState(name, size, last_used, "kept: used recently")
        if dry_run:
            return KeyState(name, size, last_used, "would remove")
        trash = f"{_TRASH}{name}-{os.getpid()}"
        os.rename(name, trash, src_dir_fd=base_fd, dst_dir_fd=base_fd)
    finally:
        if fd is not None:
            os.close(fd)
    renamed, opened = os.lstat(trash, dir_fd=base_fd), os.fstat(key_fd)
    if (renamed.st_dev, renamed.st_ino) != (opened.st_dev, opened.st_ino):
        # Swapped between the open and the rename: what was renamed is not what was judged. A link is
        # removed as a link (never entered); anything else goes back where it was.
        if stat.S_ISLNK(renamed.st_mode):
            os.unlink(trash, dir_fd=base_fd)
        else:
            os.rename(trash, name, src_dir_fd=base_fd, dst_dir_fd=base_fd)
        return KeyState(name, size, last_used, "kept: it changed while it was pruned")
    shutil.rmtree(trash, dir_fd=base_fd, ignore_errors=True)
    return KeyState(name, size, last_used, "removed")
