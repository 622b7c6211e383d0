"""Who may have written what on the cache volume, and file operations that never follow a planted link.

The cache volume may be writable by others: the guide mounts a host directory that users make
world-writable so that the container's user can write it. What the launcher keeps there lives
under `sources/`, which it creates owner-only; everything it reads back must be owned by its own
UID and writable by nobody outside that UID (and its own groups, which is what a Kubernetes
`fsGroup` adds). Anything else is "foreign": never served, and never written through.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from pathlib import Path

from nim_specdec.files.writable import unwritable_reason
from nim_specdec.errors import MaterializeError

# Directories whose contents the system or other software owns: a cache or a workspace there would
# let the launcher replace or re-mode files it does not own. Exact paths; everything under the
# pseudo file systems too.
_SYSTEM_DIRS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/usr/bin",
        "/usr/lib",
        "/usr/lib64",
        "/usr/local",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/share",
        "/var",
        "/var/lib",
        "/var/tmp",
        "/var/run",
        "/var/log",
    }
)
_PSEUDO_PREFIXES = ("/proc/", "/sys/", "/dev/")


def system_dir_problem(path: str) -> str | None:
    """Why `path` (as given, and as it resolves through links) cannot hold the launcher's files, or None."""
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        if candidate in _SYSTEM_DIRS:
            return f"{candidate} is the root or a system directory"
        if candidate.startswith(_PSEUDO_PREFIXES):
            return f"{candidate} is inside a kernel file system"
    return None


def refuse_system_dir(path: str | os.PathLike, variable: str) -> None:
    problem = system_dir_problem(str(path))
    if problem:
        raise MaterializeError(
            variable, f"refusing {path}: {problem}", f"set {variable} to a directory of its own, e.g. /opt/nim/.cache"
        )


def mount_points(mountinfo: str = "/proc/self/mountinfo") -> frozenset[str]:
    """Where file systems are mounted in this process's view (the kernel's list, octal escapes decoded);
    empty where it cannot be read."""
    try:
        with open(mountinfo, "rb") as handle:
            text = handle.read(4 << 20).decode("utf-8", "replace")
    except OSError:
        return frozenset()
    points = set()
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return frozenset(points)


def open_to_others_reason(path: str | os.PathLike, mounts: frozenset[str] | None = None) -> str | None:
    """The first folder on the way to `path` (itself or any above it, as given and as it resolves) that
    another user can write without the sticky bit, or None. There they could rename the launcher's
    owner-only folders away and put their own in place, after any check of ours. A folder above is harmless
    where the next folder on the way is a mount point (`mounts`, default: this process's): the kernel refuses
    to rename or remove a mount point (EBUSY), as in a pod whose cache volume is mounted inside an emptyDir."""
    given = Path(os.path.abspath(path))
    mounted = mount_points() if mounts is None else mounts
    for start in dict.fromkeys((given, Path(os.path.realpath(given)))):
        for child, folder in ((None, start), *zip((start, *start.parents), start.parents)):
            if child is not None and str(child) in mounted:
                continue
            try:
                st = os.stat(folder)
            except OSError:
                continue  # not there yet: it will be created owner-only
            if not stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_ISVTX:
                continue
            if st.st_mode & stat.S_IWOTH:
                return f"{folder} is writable by every user and has no sticky bit"
            if st.st_mode & stat.S_IWGRP and st.st_gid not in _our_groups():
                return (
                    f"{folder} is writable by group {st.st_gid}, which this launcher is not in, and has no sticky bit"
                )
    return None


def refuse_open_to_others(path: str | os.PathLike, variable: str) -> None:
    reason = open_to_others_reason(path)
    if reason:
        folder = reason.split(" is writable", 1)[0]
        raise MaterializeError(
            variable,
            f"refusing {path}: {reason}, so another user could swap the launcher's folders there for their own",
            f"chmod +t {folder} (the sticky bit, as on /tmp), or chmod o-w {folder}",
        )


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


def _our_groups() -> frozenset[int]:
    return frozenset({os.getegid(), *os.getgroups()})


def foreign_reason(st: os.stat_result, kind: str = "dir") -> str | None:
    """Why an lstat result is not something this process alone could have written, or None if it is ours."""
    uid = os.geteuid()
    if stat.S_ISLNK(st.st_mode):
        return "is a link"
    if kind == "dir" and not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if kind == "file" and not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_uid != uid:
        return f"is owned by uid {st.st_uid}, not by this launcher's uid {uid}"
    if st.st_mode & stat.S_IWOTH:
        return "is writable by every user"
    if st.st_mode & stat.S_IWGRP and st.st_gid not in _our_groups():
        return f"is writable by group {st.st_gid}, which this launcher is not in"
    return None


def path_foreign_reason(path: Path, kind: str = "dir") -> str | None:
    try:
        return foreign_reason(os.lstat(path), kind)
    except FileNotFoundError:
        return "does not exist"
    except OSError as err:
        return f"cannot be read ({err.strerror})"


def tree_foreign_reason(root: Path) -> str | None:
    """The first thing under `root` that another UID could have written, or None. Links are checked as
    links (their targets were checked at download time and must stay inside the tree)."""
    reason = path_foreign_reason(root)
    if reason:
        return f"{root} {reason}"
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                if st.st_uid != os.geteuid():
                    return f"{path} is a link owned by uid {st.st_uid}"
                continue
            reason = foreign_reason(st, "dir" if stat.S_ISDIR(st.st_mode) else "file")
            if reason:
                return f"{path} {reason}"
    return None


def ensure_own_dir(path: Path, what: str) -> None:
    """Create `path` owner-only, or check that the one there is ours (and make it owner-only again:
    a kubelet applying fsGroup may have opened it to the group). The check and the re-mode go through one
    descriptor opened without following a link, so nothing swapped in between is re-moded."""
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
        reason = foreign_reason(st) if st is not None else (path_foreign_reason(path) or "cannot be opened")
        if reason:
            owner = f" (owner uid {st.st_uid})" if st is not None else ""
            raise MaterializeError(
                what,
                f"refusing {path}{owner}: it {reason}, so another user could have placed or could replace what "
                "the launcher reads there",
                f"remove {path} (it is recreated owner-only), or run every launcher sharing the volume as uid "
                f"{os.geteuid()}",
            )
        if stat.S_IMODE(st.st_mode) != 0o700:
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


def open_lock(path: Path) -> int:
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
    reason = foreign_reason(os.fstat(fd), "file")
    if reason:
        os.close(fd)
        raise MaterializeError(str(path), f"refusing the lock file: it {reason}", f"remove {path}")
    return fd


def read_own_file(path: Path, limit: int) -> bytes | None:
    """The file's bytes if it is a regular file of ours no larger than `limit`; None otherwise (never a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if foreign_reason(st, "file") or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit + 1)[:limit]
    finally:
        os.close(fd)
