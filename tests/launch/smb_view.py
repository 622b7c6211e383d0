"""An SMB mount without mount options, as the launcher sees it: every entry under the volume reports uid 0,
gid 0 and mode 0777, and chmod succeeds without changing anything. Installed in the launcher's own process
(`python -m smb_view VOLUME nim-specdec ARGS...`) over a real folder: the launcher's code is the real one,
only what the file system answers about owners and modes is SMB's."""

from __future__ import annotations

import os
import runpy
import stat
import sys


def install(volume: str) -> None:
    root = os.path.realpath(volume)
    real = {name: getattr(os, name) for name in ("stat", "lstat", "fstat", "chmod", "fchmod")}

    def where(path, dir_fd=None) -> str:
        if isinstance(path, int):
            return os.readlink(f"/proc/self/fd/{path}")
        text = os.fsdecode(path)
        if dir_fd is not None and not os.path.isabs(text):
            text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
        return os.path.abspath(text)

    def inside(path, dir_fd=None) -> bool:
        try:
            found = where(path, dir_fd)
        except OSError:
            return False
        return found == root or found.startswith(root + "/")

    def smb(st: os.stat_result) -> os.stat_result:
        mode = st.st_mode if stat.S_ISLNK(st.st_mode) else stat.S_IFMT(st.st_mode) | 0o777
        fields = (mode, st.st_ino, st.st_dev, st.st_nlink, 0, 0, st.st_size, st.st_atime, st.st_mtime, st.st_ctime)
        return os.stat_result(fields)

    def stat_view(name):
        def call(path, *args, **kwargs):
            result = real[name](path, *args, **kwargs)
            return smb(result) if inside(path, kwargs.get("dir_fd")) else result

        return call

    def chmod_view(name):
        def call(path, *args, **kwargs):
            if inside(path, kwargs.get("dir_fd")):
                return None  # accepted, and nothing changes
            return real[name](path, *args, **kwargs)

        return call

    for name in ("stat", "lstat", "fstat"):
        setattr(os, name, stat_view(name))
    for name in ("chmod", "fchmod"):
        setattr(os, name, chmod_view(name))


if __name__ == "__main__":
    install(sys.argv[1])
    sys.argv = ["nim-specdec", *sys.argv[2:]]
    runpy.run_module("nim_specdec", run_name="__main__", alter_sys=True)
