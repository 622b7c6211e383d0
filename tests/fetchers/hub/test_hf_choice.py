"""The rules that choose the commit an hf:// branch is served as: tables over typed values, no server, no disk."""

from __future__ import annotations

import pytest

from nim_specdec.fetchers.hub.hf_choice import (
    BranchState,
    Failed,
    Known,
    after_asking,
    after_failed_follow,
    age_text,
    before_asking,
    budget,
    describe,
    failure_kind,
)

URI = "hf://org/m@main"
OLD, NEW, HUB = "a" * 40, "b" * 40, "c" * 40
NOW = 1_000_000.0
HOUR = 3600.0
FOLLOW, TIMEOUT = 1800.0, 10.0

SERVED_OLD = Known(OLD, NOW - 5 * HOUR, complete=True)  # refs/<name>.json: complete when written
SERVED_GONE = Known(OLD, NOW - 5 * HOUR, complete=False)  # its entry was pruned or lost since
RESOLVED_FRESH_DONE = Known(NEW, NOW - 60, complete=True)
RESOLVED_FRESH_LOADING = Known(NEW, NOW - 60, complete=False)  # the first pod is still downloading it
RESOLVED_STALE_DONE = Known(NEW, NOW - 2 * HOUR, complete=True)

NOTHING = BranchState()
CACHED = BranchState(served=SERVED_OLD)
PRUNED = BranchState(served=SERVED_GONE)
ROLLOUT = BranchState(served=SERVED_OLD, resolved=RESOLVED_FRESH_LOADING)
ROLLED = BranchState(served=Known(NEW, NOW - 60, True), resolved=RESOLVED_FRESH_DONE)
LATER = BranchState(served=SERVED_OLD, resolved=RESOLVED_STALE_DONE)

DOWN = Failed("unreachable", "ConnectError: [Errno 111] Connection refused")
SLOW = Failed("timeout", "ReadTimeout: timed out")
BROKEN = Failed("server", "HfHubHTTPError: 503 Server Error")
REVOKED = Failed("refused", "HfHubHTTPError: 401 Client Error")
GONE = Failed("answered", "RevisionNotFoundError: 404")


@pytest.mark.parametrize(
    "status, timed_out, transport, kind",
    [
        (401, False, False, "refused"),
        (403, False, False, "refused"),
        (500, False, False, "server"),
        (503, False, True, "server"),
        (408, False, False, "server"),
        (429, False, False, "server"),
        (404, False, False, "answered"),
        (400, False, False, "answered"),
        (None, True, True, "timeout"),
        (None, False, True, "unreachable"),
        (None, False, False, "answered"),  # a bug or a bad answer: never taken for an outage
    ],
)
def test_failure_kind_goes_by_status_then_connection(status, timed_out, transport, kind):
    assert failure_kind(status, timed_out, transport) == kind


@pytest.mark.parametrize(
    "state, answer, commit, how",
    [
        # The Hub answers: its commit, whatever the cache holds.
        (NOTHING, HUB, HUB, "asked"),
        (CACHED, HUB, HUB, "asked"),
        (LATER, HUB, HUB, "asked"),
        # No answer, a commit complete in the cache: served.
        (CACHED, DOWN, OLD, "cached"),
        (CACHED, SLOW, OLD, "cached"),
        (CACHED, BROKEN, OLD, "cached"),
        (CACHED, REVOKED, OLD, "cached"),
        # The newest complete commit among the records; one still downloading is not complete.
        (LATER, DOWN, NEW, "cached"),
        (ROLLOUT, DOWN, OLD, "cached"),
        # No answer and nothing complete: the start fails as before.
        (NOTHING, DOWN, None, "failed"),
        (NOTHING, REVOKED, None, "failed"),
        (PRUNED, DOWN, None, "failed"),
        (BranchState(resolved=RESOLVED_FRESH_LOADING), SLOW, None, "failed"),
        # The Hub answered no (missing repository or revision): never hidden behind a cached copy.
        (CACHED, GONE, None, "failed"),
    ],
)
def test_after_asking(state, answer, commit, how):
    choice = after_asking(URI, "main", state, NOW, answer, TIMEOUT)
    assert (choice.commit, choice.how) == (commit, how)


@pytest.mark.parametrize(
    "state, now, follow_s, commit",
    [
        (ROLLOUT, NOW, FOLLOW, NEW),  # resolved a minute ago by the first pod, still downloading: followed
        (ROLLED, NOW, FOLLOW, NEW),
        (ROLLOUT, NOW, 0.0, None),  # following off: every start asks
        (ROLLOUT, NOW, 60.0, None),  # exactly the window's length ago: asked again
        (ROLLOUT, NOW, 61.0, NEW),
        (LATER, NOW, FOLLOW, None),  # resolved two hours ago
        (CACHED, NOW, FOLLOW, None),  # served five hours ago
        (BranchState(served=Known(NEW, NOW - 60, True)), NOW, FOLLOW, NEW),  # a fresh cache's first start
        (BranchState(served=Known(NEW, NOW - 60, True), resolved=Known(HUB, NOW - 30, False)), NOW, FOLLOW, HUB),
        (NOTHING, NOW, FOLLOW, None),
        (ROLLOUT, NOW - 200, FOLLOW, NEW),  # the resolving host's clock ran a little ahead
        (ROLLOUT, NOW - 1000, FOLLOW, None),  # far ahead: not trusted
    ],
)
def test_before_asking(state, now, follow_s, commit):
    choice = before_asking(URI, "main", state, now, follow_s)
    assert (choice.commit if choice else None) == commit
    if choice:
        assert choice.how == "followed" and "NIM_HF_BRANCH_FOLLOW_S=" in choice.line


@pytest.mark.parametrize(
    "state, seconds",
    [(NOTHING, None), (PRUNED, None), (CACHED, TIMEOUT), (ROLLOUT, TIMEOUT), (LATER, TIMEOUT)],
)
def test_the_time_to_ask_is_bounded_only_when_a_commit_can_be_served_instead(state, seconds):
    assert budget(state, TIMEOUT) == seconds


@pytest.mark.parametrize(
    "answer, why",
    [
        (DOWN, "it cannot be reached: ConnectError"),
        (SLOW, "no answer within NIM_HF_RESOLVE_TIMEOUT_S=10s"),
        (BROKEN, "it failed: HfHubHTTPError: 503"),
        (REVOKED, "it refused the request, check HF_TOKEN: HfHubHTTPError: 401"),
    ],
)
def test_the_warning_names_the_commit_its_age_and_why(answer, why):
    line = after_asking(URI, "main", CACHED, NOW, answer, TIMEOUT).line
    assert line.startswith(f"{URI}: serving commit {OLD} from the cache, resolved 5.0 h ago: ")
    assert why in line and "\n" not in line


@pytest.mark.parametrize(
    "revision, offline, state, expected",
    [
        (OLD, False, NOTHING, f"pinned: the source names commit {OLD}"),
        (OLD, True, NOTHING, f"pinned: the source names commit {OLD}"),
        (None, True, CACHED, f"downloads are disabled: commit {OLD}, which main named"),
        ("v1", True, NOTHING, "downloads are disabled and no commit of v1 is recorded"),
        (None, False, ROLLOUT, f"commit {NEW} (being downloaded), which a start sharing this cache resolved main"),
        (None, False, ROLLED, f"commit {NEW} (cached), which a start sharing this cache resolved main to 60 s ago"),
        (None, False, CACHED, f"if it cannot answer within NIM_HF_RESOLVE_TIMEOUT_S=10s, cached commit {OLD}"),
        (None, False, LATER, f"cached commit {NEW} (resolved 2.0 h ago) is served"),
        ("dev", False, NOTHING, "the Hub is asked at start which commit dev names; that commit is downloaded"),
        (None, False, PRUNED, "that commit is downloaded"),
    ],
)
def test_the_plan_says_which_commit_and_why(revision, offline, state, expected):
    assert expected in describe(revision, offline, state, NOW, FOLLOW, TIMEOUT)


def test_the_plan_says_how_long_a_branch_is_still_followed():
    text = describe(None, False, ROLLOUT, NOW, FOLLOW, TIMEOUT)
    assert "without asking the Hub for 29 min more (NIM_HF_BRANCH_FOLLOW_S=1800s)" in text


@pytest.mark.parametrize(
    "seconds, text",
    [
        (-5, "0 s"),
        (59.6, "60 s"),
        (119, "119 s"),
        (120, "2 min"),
        (7199, "120 min"),
        (7200, "2.0 h"),
        (3 * 86400, "3.0 days"),
    ],
)
def test_age_text(seconds, text):
    assert age_text(seconds) == text


@pytest.mark.parametrize(
    "state, followed, commit",
    [
        (ROLLOUT, NEW, OLD),  # the first pod died mid-download of NEW and the Hub is down: the cached OLD
        (BranchState(resolved=RESOLVED_FRESH_LOADING), NEW, None),  # nothing else complete
        (ROLLED, NEW, None),  # the followed commit is the only complete one: its own error stands
        (PRUNED, OLD, None),
    ],
)
def test_a_followed_commit_that_cannot_be_fetched(state, followed, commit):
    choice = after_failed_follow(URI, "main", state, NOW, followed, "hf://org/m@x: download failed")
    assert choice.commit == commit
    if commit:
        assert choice.how == "cached" and f"commit {followed}, which a start sharing this cache" in choice.line
        assert "could not be fetched (hf://org/m@x: download failed)" in choice.line
