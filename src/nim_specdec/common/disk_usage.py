"""How many bytes a folder holds, as `cache ls` and `cache prune` report them."""

from __future__ import annotations

import os
from pathlib import Path


def tree_size(path: Path) -> int:
    """The sizes of everything under `path`, links counted as links (never followed); what vanishes or
    cannot be read meanwhile counts nothing."""
    total = 0
    for folder, dirs, files in os.walk(path, followlinks=False):
        for name in files + dirs:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total
