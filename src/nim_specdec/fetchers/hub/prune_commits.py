"""Removing the hf:// commits a branch has left: the source-cache half of `nim-specdec cache prune`.

A branch's entries are keyed by commit, so every commit a branch named stays cached after it moves. The
rule is the compile cache's: what no start has chosen for --older-than days goes. A start with network
chooses only the branch's current commit, and an offline one the commit its refs/ file names, so an
older commit is unused from the moment the branch was first seen elsewhere (the ref file's "since"), or
from the last start that named it by its commit id (that id's own ref file), whichever is later. Kept
always: the current commit of each branch, entries first fetched by commit id (a pin), entries whose branch
has no record, and anything not ours or incomplete. An entry is removed under its download lock: renamed into
tmp/ (atomic: a start meanwhile finds no entry), then deleted.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import LauncherError
from nim_specdec.fetchers.hub import branch_refs
from nim_specdec.fetchers.volume import cache
from nim_specdec.files import trust
from nim_specdec.files.disk_usage import tree_size


@dataclass(frozen=True)
class CommitState:
    key: str  # the entry's name
    size_bytes: int
    last_used: float  # when its branch moved on (seconds since the epoch); 0.0 where it did not
    action: str  # "removed", "would remove", "kept: superseded recently", "kept: in use"


def prune_commits(
    layout: cache.CacheLayout, older_than_s: float, now: float, dry_run: bool = False
) -> list[CommitState]:
    """What was done with each hf:// entry that its branch has left; entries still chosen are not listed."""
    if any(trust.path_foreign_reason(d) for d in (layout.root, layout.root / "entries", layout.tmp_dir())):
        return []  # missing, or another user could have placed what is there: nothing is touched
    states = []
    for entry in sorted((layout.root / "entries").iterdir()):
        since = superseded_since(layout, entry.name)
        if since is None:
            continue
        states.append(_prune_entry(layout, entry.name, since, older_than_s, now, dry_run))
    return states


def superseded_since(layout: cache.CacheLayout, name: str) -> float | None:
    """Since when no start has chosen this entry, whose branch moved to another commit; None if the branch did not
    move (or the entry was fetched by commit id, is not ours, is incomplete, or its branch has no record)."""
    if cache.untrusted_reason(layout, name) is not None:
        return None
    marker = cache.read_marker(layout.marker(name))
    commit, requested = (marker or {}).get("commit"), (marker or {}).get("requested")
    if not isinstance(commit, str) or not isinstance(requested, str):
        return None
    try:
        ref = parse_source(requested, "complete.json")
    except LauncherError:
        return None
    if ref.scheme != "hf" or branch_refs.is_commit(ref.revision):
        return None
    recorded = branch_refs.read_ref(layout, ref)
    if recorded is None or recorded.commit == commit:
        return None
    # Started by its commit id since (hf://ORG/NAME@<commit>, the same entry): used then.
    by_id = branch_refs.read_ref(layout, branch_refs.pinned(ref, commit))
    return max(recorded.since, by_id.resolved_at) if by_id is not None else recorded.since


def _prune_entry(
    layout: cache.CacheLayout, name: str, since: float, older_than_s: float, now: float, dry_run: bool
) -> CommitState:
    size = tree_size(layout.entry(name))
    if now - since < older_than_s:
        return CommitState(name, size, since, "kept: superseded recently")
    if dry_run:
        return CommitState(name, size, since, "would remove")
    fd = trust.open_lock(layout.lock(name))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return CommitState(name, size, since, "kept: in use")
            raise
        aside = Path(tempfile.mkdtemp(prefix=layout.tmp_prefix(name), dir=layout.tmp_dir()))
        os.rename(layout.entry(name), aside / "old")
    finally:
        os.close(fd)
    shutil.rmtree(aside, ignore_errors=True)
    return CommitState(name, size, since, "removed")
