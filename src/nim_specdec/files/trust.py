"""Who may have written what on the cache volume, and file operations that never follow a planted link.

The cache volume may be writable by others: the guide mounts a host directory that users make
world-writable so that the container's user can write it. What the launcher keeps there lives
under `sources/`, which it creates owner-only; everything it reads back must be owned by its own
UID and writable by nobody outside that UID (and its own groups, which is what a Kubernetes
`fsGroup` adds). Anything else is "foreign": never served, and never written through.

Where the platform vouches that only one workload's pods mount the volume (an opt-in variable; volume.py
says why some volumes need it), the folder it names is `vouched`: at and under it, who owns a thing and
who may write it are not asked, since nobody but the workload can; links are still never followed and a
file is still a regular file.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from nim_specdec.errors import MaterializeError
from nim_specdec.files.volume import (  # noqa: F401  (the volume's rules, used through this module too)
    Identity,
    StatView,
    mount_points,
    open_folder_fix,
    open_to_others_reason,
    owned_reason,
    refuse_open_to_others,
    refuse_system_dir,
    system_dir_problem,
    vouches,
)
from nim_specdec.files.writable import unwritable_reason


def make_dirs(path: str | os.PathLike) -> None:
    """Create `path` and each missing folder above it owner-only, whatever the umask (mkdir(parents=True)
    gives the upper ones the umask's mode: 0777 under umask 000)."""
    path = Path(os.path.abspath(path))
    missing = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass


def foreign_reason(st: os.stat_result, kind: str = "dir", vouched: bool = False) -> str | None:
    """Why an lstat result is not something this process alone could have written, or None if it is ours.
    `vouched`: it lies in the vouched folder, so only its type is judged."""
    if stat.S_ISLNK(st.st_mode):
        return "is a link"
    if kind == "dir" and not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if kind == "file" and not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    return None if vouched else owned_reason(StatView.of(st), Identity.current())


def path_foreign_reason(path: Path, kind: str = "dir", vouched: bool = False) -> str | None:
    try:
        return foreign_reason(os.lstat(path), kind, vouched)
    except FileNotFoundError:
        return "does not exist"
    except OSError as err:
        return f"cannot be read ({err.strerror})"


def tree_foreign_reason(root: Path, vouched: bool = False) -> str | None:
    """The first thing under `root` that another UID could have written, or None. Links are checked as
    links (their targets were checked at download time and must stay inside the tree)."""
    reason = path_foreign_reason(root, vouched=vouched)
    if reason:
        return f"{root} {reason}"
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                if st.st_uid != os.geteuid() and not vouched:
                    return f"{path} is a link owned by uid {st.st_uid}"
                if vouched and not _resolves_inside(path, root):  # whoever made it, it must stay in the entry
                    return f"{path} is a link that leads out of {root}"
                continue
            reason = foreign_reason(st, "dir" if stat.S_ISDIR(st.st_mode) else "file", vouched)
            if reason:
                return f"{path} {reason}"
    return None


def _resolves_inside(path: str, root: Path) -> bool:
    inside = os.path.realpath(root)
    return os.path.commonpath([os.path.realpath(path), inside]) == inside


def ensure_own_dir(path: Path, what: str, vouched: bool = False) -> None:
    """Create `path` owner-only, or check that the one there is ours (and make it owner-only again:
    a kubelet applying fsGroup may have opened it to the group). The check and the re-mode go through one
    descriptor opened without following a link, so nothing swapped in between is re-moded. `vouched`: in the
    vouched folder, where another of the workload's UIDs may have made it, or chmod may do nothing."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as err:
        unwritable = unwritable_reason(path)  # names the folder, its owner and mode, and the fix for a mount
        if unwritable:
            raise MaterializeError(what, *unwritable) from None
        raise MaterializeError(what, f"cannot create {path} ({err.strerror})", f"make {path.parent} writable") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        fd = None
    try:
        st = os.fstat(fd) if fd is not None else None
        reason = (
            foreign_reason(st, "dir", vouched)
            if st is not None
            else (path_foreign_reason(path, vouched=vouched) or "cannot be opened")
        )
        if reason:
            owner = f" (owner uid {st.st_uid})" if st is not None else ""
            raise MaterializeError(
                what,
                f"refusing {path}{owner}: it {reason}, so another user could have placed or could replace what "
                "the launcher reads there",
                f"remove {path} (it is recreated owner-only), or run every launcher sharing the volume as uid "
                f"{os.geteuid()}",
            )
        if stat.S_IMODE(st.st_mode) != 0o700 and (st.st_uid == os.geteuid() or not vouched):
            os.fchmod(fd, 0o700)
    finally:
        if fd is not None:
            os.close(fd)


def create_exclusive(directory: Path, prefix: str, mode: int = 0o600) -> tuple[int, Path]:
    """A new file under `directory` with a random name: O_EXCL|O_NOFOLLOW, so a planted link is never opened."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(16):
        path = directory / f"{prefix}{secrets.token_hex(6)}"
        try:
            return os.open(path, flags, mode), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name under {directory}")


def write_replacing(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write `path` whole: a fresh exclusive temporary file renamed over it (a rename replaces a link
    at `path` rather than following it)."""
    fd, tmp = create_exclusive(path.parent, f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def open_lock(path: Path, vouched: bool = False) -> int:
    """The lock file's descriptor: created owner-only or reused if ours; a link or a foreign file is refused."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as err:
        raise MaterializeError(
            str(path),
            f"cannot open the lock file ({err.strerror}); a link there is never followed",
            f"remove {path}",
        ) from None
    reason = foreign_reason(os.fstat(fd), "file", vouched)
    if reason:
        os.close(fd)
        raise MaterializeError(str(path), f"refusing the lock file: it {reason}", f"remove {path}")
    return fd


def read_own_file(path: Path, limit: int, vouched: bool = False) -> bytes | None:
    """The file's bytes if it is a regular file of ours no larger than `limit`; None otherwise (never a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if foreign_reason(st, "file", vouched) or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit + 1)[:limit]
    finally:
        os.close(fd)
