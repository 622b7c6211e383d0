"""Opening a file the launcher expects to be a regular one, and nothing else.

A path from a variable, an argument or a model store may name a FIFO (an open would block for ever), a
device (/dev/zero reads without end), a folder or a socket. The file is opened with O_NONBLOCK, so that a
FIFO does not block the open; its type is checked on the descriptor (no race with a rename), and only then
is O_NONBLOCK cleared for ordinary reads. Reads are capped: a whole-file read by what it reads, a
line-by-line one by the file's size (traces and records: a model's files are bounded by their headers).

Problems are OSErrors with an errno and a `strerror` saying what is wrong, so that every caller's existing
`except OSError` reports them in its own words.
"""

from __future__ import annotations

import errno
import fcntl
import io
import os
import stat
from typing import Any, BinaryIO, TextIO

from nim_specdec.errors import LauncherError
from nim_specdec.text.strict_json import FILE_INT_DIGITS
from nim_specdec.text.strict_json import loads as strict_loads

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a file of another kind")


def open_regular_fd(path: str | os.PathLike, follow: bool = True) -> int:
    """A blocking read-only descriptor on `path`, which must be a regular file (a link to one is followed
    unless `follow` is False)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            raise OSError(errno.EINVAL, f"is {kind}, not a regular file", str(path))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | os.PathLike, follow: bool = True) -> BinaryIO:
    """`open_regular_fd` as a binary file object."""
    return os.fdopen(open_regular_fd(path, follow), "rb")


def _size_text(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


def read_regular(path: str | os.PathLike, limit: int, follow: bool = True) -> bytes:
    """The whole of a regular file of at most `limit` bytes; OSError(EFBIG) when it is larger."""
    with open_regular(path, follow) as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            raise OSError(errno.EFBIG, f"is larger than {_size_text(limit)}", str(path))
        data = fh.read(limit + 1)  # the size may grow, or be unknown (0 in /proc): the read is capped too
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"is larger than {_size_text(limit)}", str(path))
    return data


def open_regular_text(path: str | os.PathLike, limit: int) -> TextIO:
    """A regular file of at most `limit` bytes (by its size) as UTF-8 text, read line by line."""
    fh = open_regular(path)
    if os.fstat(fh.fileno()).st_size > limit:
        fh.close()
        raise OSError(errno.EFBIG, f"is larger than {_size_text(limit)}", str(path))
    return io.TextIOWrapper(fh, encoding="utf-8")


def folder_root(directory: str | os.PathLike) -> str:
    """The folder whose files a model folder may link to: the folder itself, or for a Hub cache snapshot
    (`models--org--name/snapshots/REV`, whose files are links into `models--org--name/blobs`) its repository
    folder. Resolved, so that a link in the path above it is taken as the user gave it."""
    real = os.path.realpath(directory)
    parent = os.path.dirname(real)
    if os.path.basename(parent) == "snapshots" and os.path.isdir(os.path.join(os.path.dirname(parent), "blobs")):
        return os.path.dirname(parent)
    return real


def _opened_path(fd: int) -> str | None:
    """Where the descriptor's file is, as the kernel sees it (None where /proc is not mounted)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def open_inside(path: str | os.PathLike, root: str | os.PathLike) -> BinaryIO:
    """`path`, a regular file inside the folder `root`: a link is followed only to a file inside `root`
    (a file read from a model, draft, built-in or cache folder is one its owner placed there, never a
    secret a planted link points at). The resolved path is opened without following a link, and the
    opened file's own path is checked again, so a folder swapped for a link in between is caught."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise OSError(errno.EXDEV, "is a link to a file outside its folder", str(path))
    fd = open_regular_fd(real, follow=False)
    opened = _opened_path(fd)
    if opened is not None and os.path.commonpath([real_root, opened]) != real_root:
        os.close(fd)
        raise OSError(errno.EXDEV, "is a link to a file outside its folder", str(path))
    return os.fdopen(fd, "rb")


def read_inside(path: str | os.PathLike, root: str | os.PathLike, limit: int) -> bytes:
    """The whole of `path` (see `open_inside`) when it is at most `limit` bytes; OSError(EFBIG) when larger."""
    with open_inside(path, root) as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            raise OSError(errno.EFBIG, f"is larger than {_size_text(limit)}", str(path))
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"is larger than {_size_text(limit)}", str(path))
    return data


def read_json_inside(
    path: str | os.PathLike,
    root: str | os.PathLike,
    limit: int,
    error: type[LauncherError],
    where: str,
    max_digits: int = FILE_INT_DIGITS,
    fix: str | None = None,
    python_floats: bool = False,
) -> Any:
    """A JSON file from a model, draft, built-in or cache folder, read by `read_inside` and parsed strictly
    (`python_floats`: see strict_json.loads). Every problem is `error(where, ...)` naming the file and what is
    wrong with it, never quoting its content: a file that is not what it should be may hold anything, a secret
    included."""
    try:
        raw = read_inside(path, root, limit)
    except OSError as err:
        raise error(where, f"{path} {_os_problem(err)}", fix or _fix(err)) from None
    try:
        return strict_loads(raw, where, error, max_digits, quote=False, python_floats=python_floats)
    except error as err:
        raise error(where, f"{path}: {err.problem}", fix or err.fix) from None


def _os_problem(err: OSError) -> str:
    if err.errno in (errno.EFBIG, errno.EINVAL, errno.EXDEV):
        return err.strerror or "cannot be read"
    if err.errno == errno.ELOOP:
        return "is a link swapped in while it was read"
    return f"cannot be read ({err.strerror})"


def _fix(err: OSError) -> str:
    if err.errno == errno.EXDEV:
        return "replace the link with the file itself, or remove it"
    if err.errno in (errno.EFBIG, errno.EINVAL, errno.ELOOP):
        return "replace the file (re-download it, or remove its cache entry)"
    return "check the file and its permissions"
