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
from typing import BinaryIO, TextIO

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
