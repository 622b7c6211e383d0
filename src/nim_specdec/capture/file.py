"""Opening the capture file: owner-only, never through a link, only a regular file of ours.

On the ground floor because two stages open it: the pre-flight (to fail before vLLM starts) and the
capture middleware inside the server.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from nim_specdec.files.trust import make_dirs


def open_capture_file(path: str) -> int:
    """Open (creating it owner-only, with its folders) the capture file for appending; raises OSError.

    A link at the path is never followed (it could point at any file the server may write), and an
    existing file must be a regular file of ours: its mode is then reset, since captured prompts must
    stay owner-only.
    """
    make_dirs(Path(path).parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if st.st_uid != os.geteuid():
            raise OSError(errno.EPERM, f"owned by uid {st.st_uid}, not by this server's uid {os.geteuid()}")
        os.fchmod(fd, 0o600)
        os.set_blocking(fd, True)
    except OSError:
        os.close(fd)
        raise
    return fd
