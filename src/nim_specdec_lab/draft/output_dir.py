"""The output directory: ours by a marker we write, never a link followed, the draft in place only when whole.

    OUT/.nim-specdec-draft     the marker: this command made OUT (a rerun may use it again)
    OUT/work/                  splits, training rows, hidden states, checkpoints (resumed after a kill)
    OUT/untrained/             the same draft untrained, the measurement's reference
    OUT/draft/                 the exported draft with acceptance.json and acceptance.md: what a server reads

OUT is refused when it is a link, not a directory, not owned by this user, or a non-empty directory without
the marker (someone else's files: nothing there is overwritten). An empty directory is taken. Everything a
server may read is built beside its place and renamed into it once complete, so a killed run leaves the
previous draft or none, never half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from nim_specdec.errors import ConfigError
from nim_specdec.files.trust import foreign_reason, write_replacing

MARKER = ".nim-specdec-draft"
MARKER_TEXT = json.dumps({"made_by": "nim-specdec draft train", "layout": 1}) + "\n"
WHERE = "--out"


@dataclass(frozen=True)
class OutputLayout:
    root: Path

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def draft(self) -> Path:
        return self.root / "draft"

    @property
    def untrained(self) -> Path:
        return self.root / "untrained"

    def staging(self, name: str) -> Path:
        return self.work / f"{name}.partial"


def _marked(root: Path) -> bool:
    try:
        st = os.lstat(root / MARKER)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and foreign_reason(st, "file") is None


def refuse_foreign(path: Path) -> Path:
    """OUT as an absolute path if this command may write there (nothing is written yet); ConfigError naming
    --out if it is a link, not a directory, someone else's, or a non-empty directory without our marker."""
    root = Path(os.path.abspath(path))
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return root
    except OSError as err:
        raise ConfigError(WHERE, f"cannot read {root} ({err.strerror})", "choose another output directory") from None
    reason = foreign_reason(st, "dir")
    if reason:
        raise ConfigError(WHERE, f"{root} {reason}", "give a new directory, or one a previous draft train made")
    try:
        entries = os.listdir(root)
    except OSError as err:
        raise ConfigError(WHERE, f"cannot list {root} ({err.strerror})", "choose a readable directory") from None
    if entries and not _marked(root):
        raise ConfigError(
            WHERE,
            f"{root} holds files this command did not write (no {MARKER} in it)",
            "give a new or empty directory; nothing in it is overwritten",
        )
    return root


def claim(path: Path) -> OutputLayout:
    """Create OUT (owner-only) or check again that it is ours, and mark it; ConfigError naming --out otherwise."""
    root = refuse_foreign(path)
    try:
        if not os.path.lexists(root):
            os.makedirs(root.parent, exist_ok=True)
            os.mkdir(root, 0o700)
        if not _marked(root):
            write_replacing(root / MARKER, MARKER_TEXT.encode(), mode=0o644)
        _own_subdir(root / "work")
    except OSError as err:
        raise ConfigError(WHERE, f"cannot write in {root} ({err.strerror})", "choose a writable directory") from None
    return OutputLayout(root)


def _own_subdir(path: Path) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        reason = foreign_reason(os.lstat(path), "dir")
        if reason:
            raise ConfigError(WHERE, f"{path} {reason}", f"remove {path}; it is recreated") from None


def clear_staging(layout: OutputLayout, name: str) -> Path:
    """The staging path of `name`, with a killed run's leftover removed (never followed): the training stage
    creates it whole."""
    staging = layout.staging(name)
    remove_ours(staging)
    return staging


def remove_ours(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)  # rmtree removes links inside as links, never what they point at
    else:
        os.unlink(path)


def publish(layout: OutputLayout, staging: Path, name: str) -> Path:
    """Put a complete folder in place: the old one (if any) moved aside first, then the new one renamed in.
    A reader sees the old folder, then (after a moment with none) the new one, never a mixture."""
    final = layout.root / name
    old = layout.work / f"{name}.old"
    remove_ours(old)
    if os.path.lexists(final):
        os.rename(final, old)
    os.rename(staging, final)
    remove_ours(old)
    return final
