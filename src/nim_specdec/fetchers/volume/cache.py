"""Layout of the shared download cache under NIM_CACHE_PATH, and its completion markers.

    <cache>/sources/
        entries/<name>/files/          the model files, as the source holds them
        entries/<name>/complete.json   written last; an entry without it is never used
        refs/<name>.json               hf:// only: the commit a branch or tag named when last asked (branch_refs.py)
        tmp/<name>.<pid>.<random>/     a download in progress (same filesystem, renamed into entries/)
        locks/<name>.lock              one file lock per entry, held while downloading
        locks/<name>.owner             who holds it (pid, host), for the waiting message

<name> is readable (scheme and location) and ends with a hash of the normalized URI and revision,
so two sources never share an entry; an hf:// entry is named by its commit, never by a branch. The
marker holds the URI, file list, sizes and time (and, for hf://, the commit and the revision asked for);
never credentials. An entry is used only when everything in it passes the trust rule (files/trust.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from nim_specdec.config.sources import SourceRef
from nim_specdec.files import trust

MARKER = "complete.json"
FILES = "files"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# A ref without a revision means the source's default one; name it so that equal sources share an entry.
_DEFAULT_REVISION = {"hf": "main"}
# A marker lists one line per file: far below this even for sharded checkpoints.
MARKER_LIMIT = 4 * 1024 * 1024


def normalized_uri(ref: SourceRef) -> str:
    revision = ref.revision or _DEFAULT_REVISION.get(ref.scheme)
    rev = f"@{revision}" if revision else ""
    return f"{ref.scheme}://{ref.location.strip('/')}{rev}"


def entry_name(ref: SourceRef) -> str:
    uri = normalized_uri(ref)
    digest = hashlib.sha256(uri.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    readable = _UNSAFE.sub("-", uri.split("://", 1)[1]).strip("-.")[:80]
    return f"{ref.scheme}--{readable}--{digest}"


@dataclass(frozen=True)
class CacheLayout:
    root: Path  # <NIM_CACHE_PATH>/sources
    vouched: bool = False  # NIM_CACHE_TRUST_SHARED: whoever wrote it, an entry is judged by its type only

    @classmethod
    def under(cls, cache_dir: Path, vouched: bool = False) -> "CacheLayout":
        return cls(Path(cache_dir) / "sources", vouched)

    def entry(self, name: str) -> Path:
        return self.root / "entries" / name

    def files(self, name: str) -> Path:
        return self.entry(name) / FILES

    def marker(self, name: str) -> Path:
        return self.entry(name) / MARKER

    def lock(self, name: str) -> Path:
        return self.root / "locks" / f"{name}.lock"

    def owner(self, name: str) -> Path:
        return self.root / "locks" / f"{name}.owner"

    def tmp_dir(self) -> Path:
        return self.root / "tmp"

    def tmp_prefix(self, name: str) -> str:
        return f"{name}."


def read_marker(path: Path, vouched: bool = False) -> dict | None:
    """The marker's document if it is ours and well formed; anything else counts as no marker."""
    raw = trust.read_own_file(path, MARKER_LIMIT, vouched)
    if raw is None:
        return None
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    return data if _is_marker(data) else None


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _is_marker(data) -> bool:
    if not isinstance(data, dict) or data.get("complete") is not True:
        return False
    files = data.get("files")
    return (
        isinstance(data.get("uri"), str)
        and isinstance(data.get("completed_at"), str)
        and _size(data.get("size"))
        and isinstance(files, list)
        and all(isinstance(f, dict) and isinstance(f.get("path"), str) and _size(f.get("size")) for f in files)
        and sum(f["size"] for f in files) == data["size"]  # a marker whose figures disagree is no marker
    )


# No volume holds more: a size beyond it (10**400 in a marker) is a corrupt or forged marker.
MAX_SIZE = 2**63


def _size(value) -> bool:
    return type(value) is int and 0 <= value < MAX_SIZE


def untrusted_reason(layout: CacheLayout, name: str) -> str | None:
    """Why the entry on disk cannot be served (another UID could have written it), or None.
    None also when there is no entry at all."""
    for directory in (layout.root, layout.root / "entries"):
        reason = trust.path_foreign_reason(directory, vouched=layout.vouched)
        if reason == "does not exist":
            return None
        if reason:
            return f"{directory} {reason}"
    entry = layout.entry(name)
    if not os.path.lexists(entry):
        return None
    return trust.tree_foreign_reason(entry, layout.vouched)


def untrusted_entry(cache_dir: Path, ref: SourceRef, vouched: bool = False) -> str | None:
    """Why the cache entry of `ref` on disk cannot be served, or None (no entry, or a trusted one)."""
    if trust.system_dir_problem(str(cache_dir)):
        return None
    return untrusted_reason(CacheLayout.under(cache_dir, vouched), entry_name(ref))


def complete_files(layout: CacheLayout, name: str) -> Path | None:
    """The entry's files if its marker is there and valid and the whole entry is ours. Disk only, no lock."""
    if untrusted_reason(layout, name) is not None:
        return None
    if read_marker(layout.marker(name), layout.vouched) is None:
        return None
    files = layout.files(name)
    return files if trust.path_foreign_reason(files, vouched=layout.vouched) is None else None


def marker_document(
    uri: str, files: list[tuple[str, int]], now: float | None = None, extra: Mapping[str, str] | None = None
) -> dict:
    """`extra`: what a scheme records besides (hf://: "commit", and "requested", the URI as named)."""
    return {
        "complete": True,
        "uri": uri,
        **(extra or {}),
        "files": [{"path": p, "size": s} for p, s in sorted(files)],
        "size": sum(s for _, s in files),
        "completed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now if now is not None else time.time())),
    }


def commit_of(files: Path, vouched: bool = False) -> str | None:
    """The commit an entry's marker records, given the entry's files directory (what a fetch returns)."""
    marker = read_marker(Path(files).parent / MARKER, vouched)
    commit = marker.get("commit") if marker else None
    return commit if isinstance(commit, str) else None


def write_marker(path: Path, document: dict) -> None:
    trust.write_replacing(path, json.dumps(document, indent=1, allow_nan=False).encode())
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class EntryInfo:
    name: str
    uri: str
    size: int
    files: int
    completed_at: str  # "" while incomplete
    untrusted: str = ""  # why the entry is never served (another UID could have written it)
    commit: str = ""  # hf://: the commit the files are
    requested: str = ""  # hf://: the URI as first named (a branch or tag) when that commit was downloaded


def list_entries(layout: CacheLayout) -> list[EntryInfo]:
    entries_dir = layout.root / "entries"
    if not entries_dir.is_dir():
        return []
    found = []
    for entry in sorted(entries_dir.iterdir()):
        reason = untrusted_reason(layout, entry.name) or ""
        marker = read_marker(entry / MARKER, layout.vouched)
        if marker is None:
            found.append(EntryInfo(entry.name, "", 0, 0, "", reason))
        else:
            found.append(
                EntryInfo(
                    entry.name,
                    marker["uri"],
                    marker["size"],
                    len(marker["files"]),
                    marker["completed_at"],
                    reason,
                    _text(marker.get("commit")),
                    _text(marker.get("requested")),
                )
            )
    return found


def _text(value) -> str:
    return value if isinstance(value, str) else ""
