"""Which commit an hf:// branch or tag is served as at one start: the rules, pure (no disk, no network, no clock).

    before asking   a commit a start sharing the cache resolved less than NIM_HF_BRANCH_FOLLOW_S ago
                    -> that commit, nothing asked: the pods of one rollout serve one commit
    the Hub answers -> the commit it names
    no answer       (unreachable, no answer in time, 5xx/408/429, the token refused: 401/403) and a commit of
                    the branch complete in the cache -> that commit, with one warning naming it, its age and why
    otherwise       -> the start fails as it always has (a missing repository or revision, nothing cached)

The shell (hf_branch.py) reads the branch's records and the cache, asks the Hub within the time `budget`
gives, and logs the line of the Choice made here. `describe` is what `nim-specdec plan` says without asking.
"""

from __future__ import annotations

from dataclasses import dataclass

from nim_specdec.config import download_variables as dvar
from nim_specdec.fetchers.hub.branch_refs import CLOCK_SKEW_S, is_commit

# Failures after which the Hub is known not to have answered which commit a branch names.
NO_ANSWER = ("unreachable", "timeout", "server", "refused")


@dataclass(frozen=True)
class Known:
    """A commit the cache's records name for the branch."""

    commit: str
    resolved_at: float  # when a start asked the Hub and got it
    complete: bool  # its entry is complete in the cache now


@dataclass(frozen=True)
class BranchState:
    served: Known | None = None  # the commit last served with network (refs/<name>.json)
    resolved: Known | None = None  # the Hub's last answer to any start (refs/<name>.resolved.json)

    def fallback(self) -> Known | None:
        """The newest commit of the branch that is complete in the cache."""
        complete = [k for k in (self.served, self.resolved) if k is not None and k.complete]
        return max(complete, key=lambda k: k.resolved_at, default=None)


@dataclass(frozen=True)
class Failed:
    kind: str  # one of NO_ANSWER, or "answered" (the Hub said no: 404, 400, a bad answer)
    detail: str  # one line, secrets already masked


@dataclass(frozen=True)
class Choice:
    commit: str | None  # None: the start fails with the resolution's own error
    how: str  # "followed" | "asked" | "cached" | "failed"
    line: str = ""  # what the start logs (a warning when how == "cached")
    resolved_at: float | None = None  # "followed": when the start it follows asked the Hub


def failure_kind(status: int | None, timed_out: bool, transport: bool) -> str:
    """What a failed request says about the Hub: its HTTP status first, then how the connection failed."""
    if isinstance(status, int):
        if status in (401, 403):
            return "refused"
        if status >= 500 or status in (408, 429):
            return "server"
        return "answered"
    if timed_out:
        return "timeout"
    return "unreachable" if transport else "answered"


def budget(state: BranchState, resolve_timeout: float) -> float | None:
    """Seconds the start may spend asking: bounded when a cached commit can be served instead; None (the
    download's own timeout and retries) when nothing is, since waiting is then the only way to start."""
    return resolve_timeout if state.fallback() is not None else None


def followed(state: BranchState, now: float, follow_s: float) -> Known | None:
    """The newest answer the Hub gave a start sharing the cache, if it is younger than `follow_s`."""
    known = [k for k in (state.resolved, state.served) if k is not None]
    newest = max(known, key=lambda k: k.resolved_at, default=None)
    if newest is None or follow_s <= 0:
        return None
    age = now - newest.resolved_at
    return newest if -CLOCK_SKEW_S <= age < follow_s else None


def before_asking(uri: str, revision: str, state: BranchState, now: float, follow_s: float) -> Choice | None:
    """The commit to serve without asking the Hub, or None: ask."""
    follow = followed(state, now, follow_s)
    if follow is None:
        return None
    return Choice(
        follow.commit,
        "followed",
        f"{uri}: serving commit {follow.commit}, which a start sharing this cache resolved {revision} to "
        f"{age_text(now - follow.resolved_at)} ago; the Hub is not asked again before "
        f"{dvar.HF_BRANCH_FOLLOW}={follow_s:g}s have passed",
        follow.resolved_at,
    )


def after_asking(
    uri: str, revision: str, state: BranchState, now: float, answer: str | Failed, resolve_timeout: float
) -> Choice:
    """The Hub's answer (a commit) or its failure -> what is served."""
    if isinstance(answer, str):
        return Choice(answer, "asked", f"{uri}: {revision} is commit {answer}")
    fallback = state.fallback()
    if answer.kind not in NO_ANSWER or fallback is None:
        return Choice(None, "failed")
    return Choice(
        fallback.commit,
        "cached",
        f"{uri}: serving commit {fallback.commit} from the cache, resolved {age_text(now - fallback.resolved_at)} "
        f"ago: the Hub did not say which commit {revision} names now ({_why(answer, resolve_timeout)}); "
        "it is asked again at the next start",
    )


def after_failed_follow(uri: str, revision: str, state: BranchState, now: float, followed: str, error: str) -> Choice:
    """The followed commit could not be fetched (the start that resolved it died mid-download and the Hub is
    down now, say): the newest other commit of the branch complete in the cache, with one warning; else fail."""
    fallback = state.fallback()
    if fallback is None or fallback.commit == followed:
        return Choice(None, "failed")
    return Choice(
        fallback.commit,
        "cached",
        f"{uri}: serving commit {fallback.commit} from the cache, resolved {age_text(now - fallback.resolved_at)} "
        f"ago: commit {followed}, which a start sharing this cache resolved {revision} to, could not be fetched "
        f"({error}); it is asked again at the next start",
    )


def _why(failed: Failed, resolve_timeout: float) -> str:
    if failed.kind == "timeout":
        return f"no answer within {dvar.HF_RESOLVE_TIMEOUT}={resolve_timeout:g}s: {failed.detail}"
    if failed.kind == "refused":
        return f"it refused the request, check HF_TOKEN: {failed.detail}"
    if failed.kind == "server":
        return f"it failed: {failed.detail}"
    return f"it cannot be reached: {failed.detail}"


def describe(
    revision: str | None,
    offline: bool,
    state: BranchState,
    now: float,
    follow_s: float,
    resolve_timeout: float,
) -> str:
    """What a start would serve for this source and why, as far as the cache tells (`plan`: no network).
    `revision`: the branch or tag (None: main), or a commit id when the source names one."""
    if is_commit(revision):
        return f"pinned: the source names commit {revision}; the Hub is never asked which commit it is"
    branch = revision or "main"
    newest = state.fallback()
    if offline:
        if newest is None:
            return f"downloads are disabled and no commit of {branch} is recorded in the cache"
        return (
            f"downloads are disabled: commit {newest.commit}, which {branch} named when a start last asked the Hub "
            f"({age_text(now - newest.resolved_at)} ago)"
        )
    follow = followed(state, now, follow_s)
    if follow is not None:
        left = follow_s - (now - follow.resolved_at)
        status = "cached" if follow.complete else "being downloaded"
        return (
            f"commit {follow.commit} ({status}), which a start sharing this cache resolved {branch} to "
            f"{age_text(now - follow.resolved_at)} ago, without asking the Hub for {age_text(left)} more "
            f"({dvar.HF_BRANCH_FOLLOW}={follow_s:g}s)"
        )
    if newest is None:
        return f"the Hub is asked at start which commit {branch} names; that commit is downloaded"
    return (
        f"the Hub is asked at start which commit {branch} names; if it cannot answer within "
        f"{dvar.HF_RESOLVE_TIMEOUT}={resolve_timeout:g}s, cached commit {newest.commit} "
        f"(resolved {age_text(now - newest.resolved_at)} ago) is served"
    )


def age_text(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
