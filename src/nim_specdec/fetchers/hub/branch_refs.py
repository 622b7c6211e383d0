"""Which commit a branch or tag of an hf:// source named when a launcher last asked the Hub.

    <cache>/sources/refs/<entry name of hf://ORG/NAME@BRANCH>.json           {"uri", "commit", "resolved_at", "since"}
    <cache>/sources/refs/<entry name of hf://ORG/NAME@BRANCH>.resolved.json  {"uri", "commit", "resolved_at"}

A branch moves, a commit does not: entries are keyed by commit, and the first small file maps a branch to the
commit a launcher with network last served for it. It is written whole, after that commit's entry is
complete, so it never names a commit that is not cached; with downloads disabled it says what to serve.
The second is written as soon as the Hub has answered, before the download: the starts that follow within
NIM_HF_BRANCH_FOLLOW_S serve that commit without asking (hf_choice.py), even while it is still downloading.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

from nim_specdec.config import variables as var
from nim_specdec.config.sources import SourceRef
from nim_specdec.fetchers.volume import cache
from nim_specdec.files import trust

_COMMIT = re.compile(r"[0-9a-f]{40}")
_REF_LIMIT = 64 * 1024
# A record written by a host whose clock runs ahead is still believed, within this much. Beyond it, its times
# are no time at all: read as a later answer, a record stamped a year ahead would outrank every real answer
# (record() keeps it, fallback() serves it) for that year.
CLOCK_SKEW_S = 300.0


def is_commit(revision: str | None) -> bool:
    """A full git commit id: it names one tree for ever, so nothing needs to be asked."""
    return bool(revision) and _COMMIT.fullmatch(revision) is not None


def pinned(ref: SourceRef, commit: str) -> SourceRef:
    return replace(ref, revision=commit)


@dataclass(frozen=True)
class BranchRef:
    uri: str  # hf://ORG/NAME@BRANCH, normalized
    commit: str
    resolved_at: float  # time.time() when the Hub was asked
    since: float  # when the branch was first seen at this commit: the commit before it is unused since then


SERVED = ".json"  # the commit last served with network (complete)
RESOLVED = ".resolved.json"  # the Hub's last answer to any start (its download may be under way)


def ref_path(layout: cache.CacheLayout, ref: SourceRef, kind: str = SERVED) -> Path:
    return layout.root / "refs" / f"{cache.entry_name(ref)}{kind}"


def read_ref(layout: cache.CacheLayout, ref: SourceRef, kind: str = SERVED) -> BranchRef | None:
    """The recorded commit of `ref`'s branch, if the file is ours and well formed, its times finite and not
    ahead of this host's clock by more than CLOCK_SKEW_S."""
    if trust.path_foreign_reason(layout.root / "refs", vouched=layout.vouched) is not None:
        return None
    raw = trust.read_own_file(ref_path(layout, ref, kind), _REF_LIMIT, layout.vouched)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("uri") != cache.normalized_uri(ref):
        return None
    commit, resolved_at = data.get("commit"), data.get("resolved_at")
    since = data.get("since", resolved_at)
    latest = time.time() + CLOCK_SKEW_S
    times_ok = all(type(t) in (int, float) and math.isfinite(t) and t <= latest for t in (resolved_at, since))
    if not isinstance(commit, str) or not is_commit(commit) or not times_ok:
        return None
    return BranchRef(data["uri"], commit, float(resolved_at), float(since))


def record(layout: cache.CacheLayout, ref: SourceRef, commit: str, resolved_at: float, kind: str = SERVED) -> None:
    """Point `ref`'s branch at `commit`, unless a launcher that asked the Hub later already recorded its answer
    (two starts around a push: the newer answer wins, whichever download ends last)."""
    current = read_ref(layout, ref, kind)
    if current is not None and current.resolved_at > resolved_at:
        return
    if current is not None and (current.commit, current.resolved_at) == (commit, resolved_at):
        return  # a start that followed this answer: nothing new to write (nor to fsync)
    trust.ensure_own_dir(layout.root / "refs", var.CACHE_PATH, layout.vouched)
    since = current.since if current is not None and current.commit == commit else resolved_at
    document = {"uri": cache.normalized_uri(ref), "commit": commit, "resolved_at": resolved_at, "since": since}
    trust.write_replacing(ref_path(layout, ref, kind), json.dumps(document).encode())
