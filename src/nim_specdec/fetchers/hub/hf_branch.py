"""What an hf:// source is served as: a commit, chosen once per start.

    hf://ORG/NAME@<40-hex commit>   that commit; nothing is asked (a commit never changes)
    hf://ORG/NAME[@BRANCH or TAG]   with network: the commit a start sharing the cache resolved it to within
                                    NIM_HF_BRANCH_FOLLOW_S, else asked which commit it names now; that
                                    commit is downloaded (or found cached) and the branch's ref files
                                    updated. No answer from the Hub (down, slow, 5xx, token refused): the
                                    newest commit of it complete in the cache, with one warning (hf_choice.py)
                                    downloads disabled: the commit the ref file names, else the copy an
                                    earlier launcher cached under the branch name

Entries are keyed by commit, so the commits a branch named before stay in the cache, untouched.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from nim_specdec.config.sources import SourceRef
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.download import materialize
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.hub import branch_refs, hf_choice
from nim_specdec.fetchers.volume import cache
from nim_specdec.files import trust

# (source, context, seconds the asking may take in all or None) -> the commit, or UnansweredError / MaterializeError
CommitResolver = Callable[[SourceRef, FetchContext, "float | None"], str]


class UnansweredError(MaterializeError):
    """The Hub did not say which commit a branch names; `failed` says how (hf_choice.failure_kind), and the
    error itself is the start's one line when no commit of the branch is cached."""

    def __init__(self, error: MaterializeError, failed: hf_choice.Failed) -> None:
        super().__init__(error.where, error.problem, error.fix)
        self.failed = failed


def marker_fields(ref: SourceRef, commit: str) -> dict[str, str]:
    """What the entry's marker records besides its own URI: the commit, and the URI as the user named it."""
    return {"commit": commit, "requested": cache.normalized_uri(ref)}


def fetch(ref: SourceRef, ctx: FetchContext, backend: materialize.Backend, resolve_commit: CommitResolver) -> Path:
    return fetch_with_reason(ref, ctx, backend, resolve_commit)[0]


def fetch_with_reason(
    ref: SourceRef, ctx: FetchContext, backend: materialize.Backend, resolve_commit: CommitResolver
) -> tuple[Path, str]:
    """The files, and why they are that commit (the plan's `commit_reason`)."""
    if branch_refs.is_commit(ref.revision):
        path = materialize.materialize(ref, ctx, backend, marker_fields(ref, ref.revision))
        if not ctx.offline:  # when it was last used by its commit id: `cache prune` keeps it as long as that
            _record(ref, ctx, ref.revision, time.time())
        return path, describe(ref, ctx)
    if ctx.offline:
        return _offline(ref, ctx, backend), describe(ref, ctx)
    uri, revision = cache.normalized_uri(ref), ref.revision or "main"
    state = branch_state(ref, ctx)
    choice, asked_at = _choose(ref, ctx, resolve_commit, state)
    _announce(ctx, choice)
    assert choice.commit is not None
    commit = choice.commit
    try:
        path = materialize.materialize(branch_refs.pinned(ref, commit), ctx, backend, marker_fields(ref, commit))
    except MaterializeError as err:
        if choice.how != "followed":
            raise
        choice = hf_choice.after_failed_follow(uri, revision, state, time.time(), commit, err.one_line())
        if choice.commit is None:
            raise
        _announce(ctx, choice)
        commit = choice.commit
        path = materialize.materialize(branch_refs.pinned(ref, commit), ctx, backend, marker_fields(ref, commit))
    if choice.how == "asked":
        _record(ref, ctx, commit, asked_at)
    elif choice.how == "followed" and choice.resolved_at is not None:
        _record(ref, ctx, commit, choice.resolved_at)  # the start it followed may not have finished
    said = choice.line.split(": ", 1)[1]
    return path, f"the Hub answered at start: {said}" if choice.how == "asked" else said


def _choose(
    ref: SourceRef, ctx: FetchContext, resolve_commit: CommitResolver, state: hf_choice.BranchState
) -> tuple[hf_choice.Choice, float]:
    """The commit to serve (followed, asked, or the cached one when the Hub does not answer), and when the Hub
    was asked; raises the resolution's error when nothing can be served."""
    uri, revision = cache.normalized_uri(ref), ref.revision or "main"
    settings = ctx.download
    asked_at = time.time()
    choice = hf_choice.before_asking(uri, revision, state, asked_at, settings.hf_branch_follow)
    if choice is not None:
        return choice, asked_at
    try:
        answer = resolve_commit(ref, ctx, hf_choice.budget(state, settings.hf_resolve_timeout))
    except UnansweredError as err:
        choice = hf_choice.after_asking(uri, revision, state, time.time(), err.failed, settings.hf_resolve_timeout)
        if choice.commit is None:
            raise
        return choice, asked_at
    # Followed by the starts that come next, while this one downloads. A cache with no folders yet gets them
    # from the download (after its checks of the volume): there, the served record comes later.
    if cache.CacheLayout.under(ctx.cache_dir, ctx.trust_shared).root.is_dir():
        _record(ref, ctx, answer, asked_at, branch_refs.RESOLVED)
    return hf_choice.after_asking(uri, revision, state, time.time(), answer, settings.hf_resolve_timeout), asked_at


def _announce(ctx: FetchContext, choice: hf_choice.Choice) -> None:
    """One line per choice: a warning when the cached commit is served instead of the one asked for."""
    if choice.how == "cached":
        (ctx.warn or ctx.log)(choice.line)
    else:
        ctx.log(choice.line)


def _record(ref: SourceRef, ctx: FetchContext, commit: str, asked_at: float, kind: str = branch_refs.SERVED) -> None:
    try:
        branch_refs.record(cache.CacheLayout.under(ctx.cache_dir, ctx.trust_shared), ref, commit, asked_at, kind)
    except (OSError, MaterializeError) as err:
        # The commit is cached and served; only a later offline start or `cache prune` misses the record.
        ctx.log(f"{cache.normalized_uri(ref)}: could not record that it is commit {commit} ({err})")


def branch_state(ref: SourceRef, ctx: FetchContext) -> hf_choice.BranchState:
    """What the cache records about `ref`'s branch, and whether those commits are complete now (disk only)."""
    if trust.system_dir_problem(str(ctx.cache_dir)):
        return hf_choice.BranchState()
    layout = cache.CacheLayout.under(ctx.cache_dir, ctx.trust_shared)

    def known(kind: str) -> hf_choice.Known | None:
        found = branch_refs.read_ref(layout, ref, kind)
        if found is None:
            return None
        complete = materialize.cached(branch_refs.pinned(ref, found.commit), ctx) is not None
        return hf_choice.Known(found.commit, found.resolved_at, complete)

    return hf_choice.BranchState(served=known(branch_refs.SERVED), resolved=known(branch_refs.RESOLVED))


def describe(ref: SourceRef, ctx: FetchContext, now: float | None = None) -> str:
    """What a start would serve for `ref` and why, from the cache alone (no network)."""
    settings = ctx.download
    state = hf_choice.BranchState() if branch_refs.is_commit(ref.revision) else branch_state(ref, ctx)
    return hf_choice.describe(
        ref.revision,
        ctx.offline,
        state,
        time.time() if now is None else now,
        settings.hf_branch_follow,
        settings.hf_resolve_timeout,
    )


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
