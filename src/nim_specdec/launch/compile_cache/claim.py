"""Claiming the plan's compile-cache directory at start: one writer per key, everyone else a local copy.

vLLM writes most cache files atomically, but not all (vllm_compile_cache.py is rewritten in place),
so two servers sharing one directory could read each other's half-written files. The first launcher
takes an exclusive lock on the key directory and passes the lock's descriptor through exec: the
server holds it for its whole life and is the only writer there. A launcher that finds the lock
taken, or the volume read-only, copies what is there into a local directory (dropping any file
caught half-written) and points the server at the copy: it still starts warm, and writes only its
own copy. The writer touches the lock at each start: its mtime is when the key was last used, which
`nim-specdec cache prune` (launch/compile_cache/prune.py) goes by.

Compiled artefacts are code the server loads, so <NIM_CACHE_PATH>/compile is used only when it is a
real directory owned by this user (or root) that no one else may write; otherwise the server
compiles into an empty local directory (the same rule as the download cache's sources/). Where the platform
vouches for the cache volume (NIM_CACHE_TRUST_SHARED), only that it is a real directory is asked.
"""

from __future__ import annotations

import ast
import errno
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Callable

from nim_specdec.engines.vllm.release.compile_dirs import CompileCachePlan, relocate
from nim_specdec.files.regular_file import read_regular
from nim_specdec.files.trust import make_dirs, open_to_others_reason, vouches

LOCK = ".writer.lock"
_TORN_CHECK = "vllm_compile_cache.py"  # the one file vLLM rewrites in place


def claim(
    entry: CompileCachePlan,
    warn: Callable[[str], None],
    info: Callable[[str], None],
    scratch: str | None = None,
    vouched: str | None = None,
) -> dict[str, str]:
    """The variables the server gets. Keeps the lock's descriptor open (inheritable) when it is the writer.
    A local fallback goes in a new directory under `scratch` (default: the system's temporary directory).
    `vouched`: the folder the platform vouches for (files/volume.py), or None."""
    if not entry.env:
        return {}
    root = Path(entry.dir)
    problem = untrusted_reason(root.parent, vouched)
    if problem:
        local = Path(tempfile.mkdtemp(prefix="nim-compile-cache-", dir=scratch))
        warn(
            f"compile cache: {root.parent} {problem}; compiling into {local} for this start "
            "(make it owned by this user and writable by it only)"
        )
        return _made(relocate(entry, str(local)))
    try:
        for path in entry.env.values():
            make_dirs(path)
        fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as err:
        local = _local_copy(root, entry, scratch)
        warn(
            f"compile cache: {root} is not writable ({err.strerror}); using {local} for this start, "
            "so the next start compiles again (mount NIM_CACHE_PATH read-write to keep it)"
        )
        return relocate(entry, str(local))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        os.close(fd)
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        local = _local_copy(root, entry, scratch)
        info(f"compile cache: another server is the writer of {root}; starting from a copy in {local}")
        return relocate(entry, str(local))
    os.set_inheritable(fd, True)  # held by the server after exec, released when it exits
    os.utime(fd)  # when this key was last used, for `nim-specdec cache prune`
    info(f"compile cache: {root}")
    return dict(entry.env)


def untrusted_reason(base: Path, vouched: str | None = None) -> str:
    """Why `base` may not hold code the server will load ("" when it may)."""
    try:
        make_dirs(base)
    except OSError:
        pass  # a read-only volume: judged as it is, and used read-only
    above = open_to_others_reason(base.parent, vouched=vouched)
    if above:
        return f"is under {above}"
    try:
        info = os.lstat(base)
    except OSError:
        return ""  # absent and not creatable: nothing there to trust or distrust
    if vouches(vouched, base):
        return "" if stat.S_ISDIR(info.st_mode) else "is a link or not a directory"
    return untrusted_reason_of(info)


def untrusted_reason_of(st: os.stat_result) -> str:
    """Why a folder with this (lstat) status may not hold code the server will load ("" when it may)."""
    if not stat.S_ISDIR(st.st_mode):
        return "is a link or not a directory"
    if st.st_uid not in (os.geteuid(), 0):
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_gid not in os.getgroups()):
        return "may be written by other users"
    return ""


def _made(env: dict[str, str]) -> dict[str, str]:
    for path in env.values():
        make_dirs(path)
    return env


def _local_copy(root: Path, entry: CompileCachePlan, scratch: str | None) -> Path:
    local = Path(tempfile.mkdtemp(prefix="nim-compile-cache-", dir=scratch))
    for path in entry.env.values():
        source = Path(path)
        target = local / source.relative_to(root)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, ignore=_skip_temporary, dirs_exist_ok=True)
        make_dirs(target)
    drop_torn(local)
    return local


def _skip_temporary(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n.endswith(".tmp") or n == LOCK]


# vLLM's compile index is a few KB; a larger one is not worth parsing.
MAX_INDEX_BYTES = 16 * 1024 * 1024


def drop_torn(root: Path) -> list[Path]:
    """Remove each compile directory whose index does not parse (copied while the writer rewrote it):
    vLLM would fail on it, and without it vLLM compiles that part again."""
    dropped = []
    for index in sorted(root.rglob(_TORN_CHECK)):
        try:
            ast.literal_eval(read_regular(index, MAX_INDEX_BYTES, follow=False).decode("utf-8"))
        except (OSError, ValueError, SyntaxError, MemoryError, RecursionError):
            shutil.rmtree(index.parent, ignore_errors=True)
            dropped.append(index.parent)
    return dropped
