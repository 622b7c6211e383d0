"""Opening the capture file: owner-only, never through a link, only a regular file of ours.

On the ground floor because two stages open it: the pre-flight (to fail before vLLM starts) and the
capture middleware inside the server.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from nim_specdec.errors import LauncherError
from nim_specdec.files.trust import make_dirs
from nim_specdec.text.strict_json import loads

# How much of an existing file is read to see that it is a capture: its first record, or the start of it.
_HEAD_BYTES = 64 * 1024
_NOT_OURS = "not a capture file nim-specdec created (it is left as it is); remove it or set another path"


def _holds_captures(fd: int, size: int) -> bool:
    """Whether an existing file reads as one the launcher wrote: empty, or JSON Lines whose first line is a
    JSON object (a first record longer than the read starts as one)."""
    if size == 0:
        return True
    head = os.pread(fd, _HEAD_BYTES, 0)
    if b"\n" not in head:
        return head.startswith(b'{"')
    try:
        return isinstance(loads(head.split(b"\n", 1)[0], "capture file", quote=False), dict)
    except LauncherError:
        return False


def open_capture_file(path: str) -> int:
    """Open (creating it owner-only, with its folders) the capture file for appending; raises OSError.

    A link at the path is never followed (it could point at any file the server may write). A file the
    launcher creates is made owner-only; an existing one is used only when it is a capture of ours: a regular
    file of this user's, owner-only (0600, as created), holding captured requests. Anything else is refused and
    left untouched (not appended to, its mode not changed): the path may name a file the user keeps for
    something else.
    """
    make_dirs(Path(path).parent)
    flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd, created = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600), True
    except FileExistsError:
        fd, created = os.open(path, flags), False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if st.st_uid != os.geteuid():
            raise OSError(errno.EPERM, f"owned by uid {st.st_uid}, not by this server's uid {os.geteuid()}")
        if created:
            os.fchmod(fd, 0o600)  # whatever the umask: captured prompts stay owner-only
        elif stat.S_IMODE(st.st_mode) != 0o600:
            raise OSError(errno.EPERM, f"an existing file of mode {stat.S_IMODE(st.st_mode):04o}, {_NOT_OURS}")
        elif not _holds_captures(fd, st.st_size):
            raise OSError(errno.EPERM, f"an existing file that holds no captured requests, {_NOT_OURS}")
        os.set_blocking(fd, True)
    except OSError:
        os.close(fd)
        raise
    return fd
