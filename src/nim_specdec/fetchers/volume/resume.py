"""Resuming an interrupted download from the files already on the volume, verified before they are trusted.

A download runs in tmp/<entry>.<random>/files/ (cache.py). A pod killed mid-download (SIGKILL, the startup
probe's SIGTERM) or an attempt that failed and is retried leaves that folder behind. The next attempt, with
the entry's lock held (so no live download owns any leftover of this entry), moves the files of such folders
into its own download folder: only the launcher's own regular files (the trust rule of files/trust.py: our
UID, written by nobody else, one link), never through a link, never the clients' bookkeeping (.cache).
The leftover folders are then removed.

Nothing half-downloaded is used: every client here writes a file under a temporary name and renames it when
it is complete (boto3's transfer manager, s5cmd, huggingface_hub), or writes it in order (google-cloud-storage).
Once the listing is known, a moved file is kept only when the listing names it with the same size and the
store's digest matches it (hashed even with NIM_DOWNLOAD_VERIFY=size); every other file is removed and fetched,
a file the store gives no digest for included (an object replaced since the kill may have the same size). So a
client's temporary file left by the kill (s3transfer's `NAME.1a2B3c4D`, s5cmd's `NAME123`) is moved with the
others and removed before the transfer starts, unless the listing names an object so: then its digest decides.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Iterable

from nim_specdec.fetchers.integrity.verify import Hasher, RemoteFile
from nim_specdec.files import trust

# The clients' own bookkeeping (huggingface_hub's .incomplete files and metadata): never moved.
_SKIP_DIRS = frozenset({".cache"})


def adopt_leftovers(tmp_dir: Path, prefix: str, dest: Path, current: Path) -> int:
    """Move the files of every leftover folder of this entry (`prefix`*) under `tmp_dir`, except `current`
    (this attempt's), into `dest`; remove the leftovers. Call with the entry's lock held. Returns the count."""
    moved = 0
    for leftover in sorted(tmp_dir.glob(glob_escape(prefix) + "*")):
        if leftover == current:
            continue
        if os.path.islink(leftover) or not leftover.is_dir():
            os.unlink(leftover)
            continue
        if trust.path_foreign_reason(leftover) is None and trust.path_foreign_reason(leftover / "files") is None:
            moved += _move_own_files(leftover / "files", dest)
        shutil.rmtree(leftover, ignore_errors=True)
    return moved


def glob_escape(text: str) -> str:
    """`text` as a glob that matches only itself (fnmatch's patterns too: `[`, `*` and `?` in brackets)."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in text)


def _move_own_files(src: Path, dest: Path) -> int:
    moved = 0
    for dirpath, dirnames, filenames in os.walk(src):  # never follows a link to a folder
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and _own_dir(os.path.join(dirpath, d))]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if trust.foreign_reason(st, "file") is not None or st.st_nlink != 1:
                continue
            target = dest / os.path.relpath(path, src)
            if os.path.lexists(target):
                continue
            try:
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                os.rename(path, target)
            except OSError:  # a file of one leftover where another has a folder: that file is not taken over
                continue
            moved += 1
    return moved


def _own_dir(path: str) -> bool:
    try:
        return trust.foreign_reason(os.lstat(path), "dir") is None
    except OSError:
        return False


def discard_reason(listed: RemoteFile | None, mode: int, size: int) -> str | None:
    """Pure: why a file found in the download folder cannot stand for the listed file, or None (checked
    further by its digest, where there is one)."""
    if listed is None:
        return "not in the listing"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    if size != listed.size:
        return f"size {size}, the store's {listed.size}"
    return None


def sized_matches(dest: Path, files: Iterable[RemoteFile]) -> dict[str, RemoteFile]:
    """The listed files present in `dest` with their listed size; everything else in `dest` is removed."""
    wanted = {f.name: f for f in files}
    found: dict[str, RemoteFile] = {}
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, dest)
            st = os.lstat(path)
            if discard_reason(wanted.get(rel), st.st_mode, st.st_size) is None:
                found[rel] = wanted[rel]
            else:
                os.unlink(path)
        for name in dirnames:
            if os.path.islink(os.path.join(dirpath, name)):
                os.unlink(os.path.join(dirpath, name))
    return found


def digest_checked(dest: Path, candidates: dict[str, RemoteFile], hasher: Hasher) -> set[str]:
    """The candidates whose digest matches the store's; the others are removed (and forgotten by the Hasher,
    so that their new download is hashed). A file the store gives no digest for is removed too: a same-sized
    object replaced since the kill would pass a size check. With NIM_DOWNLOAD_VERIFY=size the candidates are
    hashed all the same (a pool of their own): hashing what is on the volume costs less than fetching it."""
    with_digest = [f for f in candidates.values() if f.digest is not None]
    if hasher.enabled:
        found = hasher.results(with_digest) if with_digest else {}
    else:
        with Hasher(dest, True) as own:
            found = own.results(with_digest) if with_digest else {}
    kept = set()
    for f in candidates.values():
        if f.digest is not None and found.get(f.name) == f.digest[1]:
            kept.add(f.name)
            continue
        hasher.forget(f.name)
        os.unlink(dest / f.name)
    return kept
