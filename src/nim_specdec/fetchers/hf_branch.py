"""What an hf:// source is served as: a commit, chosen once per start.

    hf://ORG/NAME@<40-hex commit>   that commit; nothing is asked (a commit never changes)
    hf://ORG/NAME[@BRANCH or TAG]   with network: asked which commit it names now, that commit is
                                    downloaded (or found cached) and the branch's ref file updated;
                                    downloads disabled: the commit the ref file names, else the copy an
                                    earlier launcher cached under the branch name

Entries are keyed by commit, so the commits a branch named before stay in the cache, untouched.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from nim_specdec.files import trust
from nim_specdec.config.sources import SourceRef
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers import branch_refs, cache, materialize
from nim_specdec.fetchers.base import FetchContext

Resolver = Callable[[SourceRef, FetchContext], str]


def marker_fields(ref: SourceRef, commit: str) -> dict[str, str]:
    """What the entry's marker records besides its own URI: the commit, and the URI as the user named it."""
    return {"commit": commit, "requested": cache.normalized_uri(ref)}


def fetch(ref: SourceRef, ctx: FetchContext, backend: materialize.Backend, resolve: Resolver) -> Path:
    if branch_refs.is_commit(ref.revision):
        path = materialize.materialize(ref, ctx, backend, marker_fields(ref, ref.revision))
        if not ctx.offline:  # when it was last used by its commit id: `cache prune` keeps it as long as that
            _record(ref, ctx, ref.revision, time.time())
        return path
    if ctx.offline:
        return _offline(ref, ctx, backend)
    asked_at = time.time()
    commit = resolve(ref, ctx)
    uri = cache.normalized_uri(ref)
    ctx.log(f"{uri}: {ref.revision or 'main'} is commit {commit}")
    path = materialize.materialize(branch_refs.pinned(ref, commit), ctx, backend, marker_fields(ref, commit))
    _record(ref, ctx, commit, asked_at)
    return path


def _record(ref: SourceRef, ctx: FetchContext, commit: str, asked_at: float) -> None:
    try:
        branch_refs.record(cache.CacheLayout.under(ctx.cache_dir, ctx.trust_shared), ref, commit, asked_at)
    except (OSError, MaterializeError) as err:
        # The commit is cached and served; only a later offline start or `cache prune` misses the record.
        ctx.log(f"{cache.normalized_uri(ref)}: could not record that it is commit {commit} ({err})")


def cached(ref: SourceRef, ctx: FetchContext) -> Path | None:
    """What would be served with downloads disabled (no network): see newest_cached."""
    found = newest_cached(ref, ctx)
    return found[0] if found else None


def newest_cached(ref: SourceRef, ctx: FetchContext) -> tuple[Path, str | None] | None:
    """(files, commit) of the newest complete copy of `ref`, or None. A branch's newest copy is the commit a
    launcher with network last resolved it to; failing that, an entry cached under the branch name by a
    launcher that did not record commits (its commit is unknown: None)."""
    if branch_refs.is_commit(ref.revision):
        hit = materialize.cached(ref, ctx)
        return (hit, ref.revision) if hit else None
    if trust.system_dir_problem(str(ctx.cache_dir)):
        return None
    recorded = branch_refs.read_ref(cache.CacheLayout.under(ctx.cache_dir, ctx.trust_shared), ref)
    if recorded is not None:
        hit = materialize.cached(branch_refs.pinned(ref, recorded.commit), ctx)
        if hit is not None:
            return hit, recorded.commit
    legacy = materialize.cached(ref, ctx)
    return (legacy, None) if legacy else None


def _offline(ref: SourceRef, ctx: FetchContext, backend: materialize.Backend) -> Path:
    uri = cache.normalized_uri(ref)
    found = newest_cached(ref, ctx)
    if found is not None:
        path, commit = found
        what = f"commit {commit}" if commit else "the copy cached under the branch name (its commit was not recorded)"
        ctx.log(f"{uri}: downloads are disabled; serving {what}, the newest cached for {ref.revision or 'main'}")
        return path
    # Nothing to serve: materialize says why in its own words (an entry another user wrote, or none at all).
    recorded = (
        None
        if trust.system_dir_problem(str(ctx.cache_dir))
        else branch_refs.read_ref(cache.CacheLayout.under(ctx.cache_dir, ctx.trust_shared), ref)
    )
    return materialize.materialize(branch_refs.pinned(ref, recorded.commit) if recorded else ref, ctx, backend)
