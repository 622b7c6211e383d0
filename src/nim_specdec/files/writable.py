"""Why a folder the launcher must write (the cache) or read (a model) cannot be, in words that name its owner
and the fix.

The common case is a host folder mounted as the cache: created by root (mode 0755) while the image
runs as UID 1000; or a model folder copied in as root with mode 0700. `mkdir`'s or `open`'s "Permission
denied" alone does not say whose folder it is or what to do.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def unwritable_folder(folder: str, owner: int, mode: int, uid: int) -> tuple[str, str]:
    """(problem, fix) for a folder owned by `owner` with permission bits `mode` that `uid` cannot write (pure)."""
    problem = (
        f"cannot write {folder}: it is owned by uid {owner} with mode {stat.S_IMODE(mode):04o}, "
        f"and the launcher runs as uid {uid}"
    )
    if owner == uid:
        return problem, f"give its owner write access (chmod u+rwx on the folder mounted at {folder})"
    chown = f"make the folder mounted at {folder} owned by uid {uid} (on the host: sudo chown -R {uid}:0 DIR)"
    if owner == 0:  # never advise running the server as root
        return problem, f"{chown}, or mount a folder that uid {uid} owns"
    return problem, f"{chown}, or run as its owner (docker run --user {owner}:0; in Kubernetes runAsUser: {owner})"


def unreadable_folder(folder: str, owner: int, mode: int, uid: int) -> tuple[str, str]:
    """(problem, fix) for a model folder owned by `owner` with permission bits `mode` that `uid` cannot read (pure)."""
    problem = (
        f"cannot read {folder}: it is owned by uid {owner} with mode {stat.S_IMODE(mode):04o}, "
        f"and the launcher runs as uid {uid}"
    )
    return problem, f"make the folder mounted at {folder} readable by uid {uid} (on the host: chmod -R a+rX DIR)"


def unreadable_reason(path: Path) -> tuple[str, str] | None:
    """(problem, fix) when this process cannot list and enter the folder `path`, else None."""
    if os.access(path, os.R_OK | os.X_OK):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return unreadable_folder(str(path), st.st_uid, st.st_mode, os.geteuid())


def nearest_existing(path: Path) -> Path:
    """`path`, or the closest of its parents that exists: the folder a mkdir under it would write."""
    current = Path(os.path.abspath(path))
    while not os.path.lexists(current) and current.parent != current:
        current = current.parent
    return current


def unwritable_reason(path: Path) -> tuple[str, str] | None:
    """(problem, fix) when this process cannot create or write `path`, else None."""
    folder = nearest_existing(path)
    if os.access(folder, os.W_OK | os.X_OK):
        return None
    try:
        st = os.stat(folder)
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return None
    if read_only:
        return read_only_folder(str(folder))
    return unwritable_folder(str(folder), st.st_uid, st.st_mode, os.geteuid())


def read_only_folder(folder: str) -> tuple[str, str]:
    """(problem, fix) for a folder on a file system mounted read-only (EROFS): no chmod or chown helps."""
    return (
        f"cannot write {folder}: it is on a read-only file system",
        f"mount the volume at {folder} read-write (docker run -v HOST:{folder} without :ro; "
        "in Kubernetes readOnly: false)",
    )
