"""The cache volume as clusters make it: who may write its folders, judged from what `stat` says of them.

Four shapes are common. A host folder or a volume root owned by root, mode 0777, without the sticky bit
(many ReadWriteMany CSI drivers; `fsGroup` not applied); the same with the sticky bit; a volume the kubelet
gave the pod's `fsGroup` (group-owned, setgid, group-writable); and an SMB mount without mount options,
where every entry reports uid 0 and mode 0777 and chmod does nothing. On the first and the last, another
UID could rename the launcher's folders after any check of ours, so trust cannot be proven from the volume:
the launcher refuses it, naming the fixes a cluster has (docs/deploy.md, per storage class), unless the
platform vouches that only this workload's pods mount it (the opt-in variable, NIM_CACHE_TRUST_SHARED).

The judgements are pure, over a `StatView` (owner, group, mode) and an `Identity` (this process's UID and
groups), so each shape is tested as a table; the functions below them read the disk.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from nim_specdec.errors import MaterializeError


@dataclass(frozen=True)
class StatView:
    """What `stat` says of a folder or file: all the trust rule looks at besides its type."""

    uid: int
    gid: int
    mode: int  # st_mode, type bits included

    @classmethod
    def of(cls, st: os.stat_result) -> "StatView":
        return cls(st.st_uid, st.st_gid, st.st_mode)


@dataclass(frozen=True)
class Identity:
    uid: int
    groups: frozenset[int]  # the effective group and the supplementary ones (a pod's fsGroup among them)

    @classmethod
    def current(cls) -> "Identity":
        return cls(os.geteuid(), frozenset({os.getegid(), *os.getgroups()}))


def open_folder_reason(folder: str, view: StatView, me: Identity) -> str | None:
    """Why another user could rename or replace what is in this folder (a directory), or None (pure): it is
    writable by every user, or by a group `me` is not in, and has no sticky bit."""
    if view.mode & stat.S_ISVTX:
        return None
    if view.mode & stat.S_IWOTH:
        return f"{folder} is writable by every user and has no sticky bit"
    if view.mode & stat.S_IWGRP and view.gid not in me.groups:
        return f"{folder} is writable by group {view.gid}, which this launcher is not in, and has no sticky bit"
    return None


def owned_reason(view: StatView, me: Identity) -> str | None:
    """Why a thing with this owner and mode is not something `me` alone (with its groups) could have written,
    or None (pure)."""
    if view.uid != me.uid:
        return f"is owned by uid {view.uid}, not by this launcher's uid {me.uid}"
    if view.mode & stat.S_IWOTH:
        return "is writable by every user"
    if view.mode & stat.S_IWGRP and view.gid not in me.groups:
        return f"is writable by group {view.gid}, which this launcher is not in"
    return None


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


def vouches(vouched: str | os.PathLike | None, path: str | os.PathLike) -> bool:
    """Whether `path` is the vouched folder or lies under it (as given, and as each resolves)."""
    if vouched is None:
        return False
    roots = {os.path.abspath(vouched), os.path.realpath(vouched)}
    for candidate in {os.path.abspath(path), os.path.realpath(path)}:
        if any(candidate == root or candidate.startswith(root.rstrip("/") + "/") for root in roots):
            return True
    return False


def open_to_others_reason(
    path: str | os.PathLike, mounts: frozenset[str] | None = None, vouched: str | os.PathLike | None = None
) -> str | None:
    """The first folder on the way to `path` (itself or any above it, as given and as it resolves) that
    another user can write without the sticky bit, or None. There they could rename the launcher's
    owner-only folders away and put their own in place, after any check of ours. A folder above is harmless
    where the next folder on the way is a mount point (`mounts`, default: this process's): the kernel refuses
    to rename or remove a mount point (EBUSY), as in a pod whose cache volume is mounted inside an emptyDir.
    A folder at or under `vouched` is not judged: the platform vouches for whoever writes there."""
    given = Path(os.path.abspath(path))
    mounted = mount_points() if mounts is None else mounts
    me = Identity.current()
    for start in dict.fromkeys((given, Path(os.path.realpath(given)))):
        for child, folder in ((None, start), *zip((start, *start.parents), start.parents)):
            if child is not None and str(child) in mounted or vouches(vouched, folder):
                continue
            try:
                st = os.stat(folder)
            except OSError:
                continue  # not there yet: it will be created owner-only
            if stat.S_ISDIR(st.st_mode):
                reason = open_folder_reason(str(folder), StatView.of(st), me)
                if reason:
                    return reason
    return None


def refuse_open_to_others(
    path: str | os.PathLike, variable: str, opt_in: str, vouched: str | os.PathLike | None = None
) -> None:
    """MaterializeError (exit 3) naming the open folder and every fix, `opt_in` (the variable by which the
    platform vouches for the volume) last."""
    reason = open_to_others_reason(path, vouched=vouched)
    if reason:
        folder = reason.split(" is writable", 1)[0]
        raise MaterializeError(
            variable,
            f"refusing {path}: {reason}, so another user could swap the launcher's folders there for their own",
            open_folder_fix(folder, opt_in),
        )


def open_folder_fix(folder: str, opt_in: str) -> str:
    """The fixes for a folder others can write without the sticky bit, on a host and on a cluster (pure)."""
    return (
        f"chmod +t {folder} once (the sticky bit, as on /tmp: on Kubernetes from an init container running as "
        f"root), or chmod o-w {folder}; where chmod has no effect (SMB, Azure Files) mount it with the driver's "
        "options uid=<the pod's UID>,gid=<its fsGroup>,dir_mode=0770,file_mode=0660; on EFS use an access point "
        "with the pod's UID and mode 0700 (docs/deploy.md has each storage class); or, where only this "
        f"workload's pods mount the volume, {opt_in}=1"
    )
