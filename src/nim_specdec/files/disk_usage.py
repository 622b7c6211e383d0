"""How many bytes a folder holds, as `cache ls` and `cache prune` report them."""

from __future__ import annotations

import os
from pathlib import Path


def tree_size(path: Path | str, dir_fd: int | None = None) -> int:
    """The sizes of everything under `path` (relative to `dir_fd` when given, so a caller that opened the
    folder measures what it opened), links counted as links (never followed); what vanishes or cannot be
    read meanwhile counts nothing."""
    total = 0
    for _folder, dirs, files, fd in os.fwalk(path, dir_fd=dir_fd, follow_symlinks=False):
        for name in files + dirs:
            try:
                total += os.lstat(name, dir_fd=fd).st_size
            except OSError:
                pass
    return total
