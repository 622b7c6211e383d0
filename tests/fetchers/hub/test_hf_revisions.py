"""hf:// revisions against the project's Hub stub, where olah is not faithful (a missing revision is 404
RevisionNotFound on the Hub) or where the requests must be counted (the fault proxy records them); and the
branch -> commit records themselves, on disk."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.download.materialize import materialize
from nim_specdec.fetchers.hub import branch_refs
from nim_specdec.fetchers.hub.hf import HFBackend, HFFetcher
from nim_specdec.fetchers.volume.cache import CacheLayout
from servers.harness import context_for, model_files, tree_bytes
from servers.hf_store import HFStore

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def hub():
    store = HFStore().start()
    yield store
    store.close()


@pytest.fixture
def published(hub):
    hub.proxy.reset()
    files = model_files(4096)
    return hub.publish(f"r{uuid.uuid4().hex[:10]}", files), files


def context(hub, cache: Path, logs: list | None = None, offline: bool = False) -> FetchContext:
    # Every start asks the Hub: these cases push between starts (test_hf_fallback.py follows a branch).
    env = {**hub.env(), "NIM_HF_BRANCH_FOLLOW_S": "0"}
    return context_for(env, cache, offline=offline, log=(logs if logs is not None else []).append)


def api_requests(hub) -> list[str]:
    return [r.path.split("?")[0] for r in hub.proxy.state.records if "/api/" in r.path]


@pytest.mark.parametrize(
    "revision, is_commit",
    [
        (COMMIT, True),
        (None, False),
        ("main", False),
        ("v1.0", False),
        (COMMIT[:12], False),
        (COMMIT.upper(), False),
        (COMMIT + "0", False),
    ],
)
def test_only_a_full_commit_id_needs_no_resolution(revision, is_commit):
    assert branch_refs.is_commit(revision) is is_commit


def test_a_branch_costs_one_metadata_request_and_a_cached_commit_none(hub, published, tmp_path):
    uri, files = published
    ref = parse_source(uri, "NIM_DRAFT_MODEL_PATH")
    logs: list[str] = []
    path = HFFetcher().fetch(ref, context(hub, tmp_path, logs))
    assert tree_bytes(path) == files
    commit = json.loads((path.parent / "complete.json").read_text())["commit"]
    assert api_requests(hub)[0] == f"/api/models/{ref.location}/revision/main"
    assert [line for line in logs if "is commit" in line] == [f"{uri}@main: main is commit {commit}"]
    hub.proxy.reset()
    assert HFFetcher().fetch(parse_source(f"{uri}@{commit}", "X"), context(hub, tmp_path)) == path
    assert hub.proxy.state.records == []  # by commit: nothing asked, nothing downloaded


def test_a_push_is_served_by_the_next_start_and_the_old_commit_stays(hub, published, tmp_path):
    uri, files = published
    ref = parse_source(uri, "X")
    first = HFFetcher().fetch(ref, context(hub, tmp_path))
    newer = {**files, "config.json": b'{"pushed": true}'}
    hub.hub.repos.add(ref.location, newer)
    second = HFFetcher().fetch(ref, context(hub, tmp_path))
    assert second != first and tree_bytes(second) == newer and tree_bytes(first) == files
    recorded = branch_refs.read_ref(CacheLayout.under(tmp_path), ref)
    assert recorded is not None and recorded.commit in second.parent.name
    assert HFFetcher().cached(ref, context(hub, tmp_path)) == second


def test_a_missing_revision_names_the_revision(hub, published, tmp_path):
    uri, _ = published
    with pytest.raises(MaterializeError) as err:
        HFFetcher().fetch(parse_source(f"{uri}@no-such-branch", "X"), context(hub, tmp_path))
    assert err.value.exit_code == EXIT_MATERIALIZE
    assert "the revision does not exist" in str(err.value) and "@no-such-branch" in str(err.value)
    assert not list(tmp_path.rglob("complete.json"))


def test_offline_serves_an_entry_cached_under_the_branch_name_by_an_earlier_launcher(hub, published, tmp_path):
    """Caches written before entries were keyed by commit hold hf://ORG/NAME@main itself: still served."""
    uri, files = published
    ref = parse_source(uri, "X")
    legacy = materialize(ref, context(hub, tmp_path), HFBackend())  # what the launcher used to do
    logs: list[str] = []
    assert HFFetcher().fetch(ref, context(hub, tmp_path, logs, offline=True)) == legacy
    assert tree_bytes(legacy) == files
    assert [line for line in logs if "downloads are disabled" in line] == [
        f"{uri}@main: downloads are disabled; serving the copy cached under the branch name (its commit was not "
        "recorded), the newest cached for main"
    ]


def test_offline_without_a_copy_asks_nothing_and_says_how_to_prefetch(hub, published, tmp_path):
    uri, _ = published
    with pytest.raises(MaterializeError) as err:
        HFFetcher().fetch(parse_source(uri, "X"), context(hub, tmp_path, offline=True))
    assert "nim-specdec download" in str(err.value) and hub.proxy.state.records == []


def test_a_later_resolution_is_never_replaced_by_an_earlier_one(tmp_path):
    layout = CacheLayout.under(tmp_path)
    layout.root.mkdir(parents=True, mode=0o700)
    ref = parse_source("hf://org/name@dev", "X")
    later, earlier = "a" * 40, "b" * 40
    branch_refs.record(layout, ref, later, resolved_at=200.0)
    branch_refs.record(layout, ref, earlier, resolved_at=100.0)  # a slower download that asked first
    assert branch_refs.read_ref(layout, ref).commit == later
    branch_refs.record(layout, ref, earlier, resolved_at=300.0)
    assert branch_refs.read_ref(layout, ref).commit == earlier
    assert branch_refs.read_ref(layout, parse_source("hf://org/name@main", "X")) is None


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"[]",
        b'{"uri": "hf://org/other@dev", "commit": "' + b"a" * 40 + b'", "resolved_at": 1}',
        b'{"uri": "hf://org/name@dev", "commit": "short", "resolved_at": 1}',
        b'{"uri": "hf://org/name@dev", "commit": "' + b"a" * 40 + b'", "resolved_at": "soon"}',
    ],
)
def test_a_malformed_record_counts_as_none(tmp_path, content):
    layout = CacheLayout.under(tmp_path)
    ref = parse_source("hf://org/name@dev", "X")
    path = branch_refs.ref_path(layout, ref)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(content)
    assert branch_refs.read_ref(layout, ref) is None


def prune_cli(hub, cache: Path, *args: str) -> list[dict]:
    import os
    import subprocess
    import sys

    from servers.harness import SRC

    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(NIM_CACHE_PATH=str(cache), PYTHONPATH=str(SRC))
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "cache", "prune", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_prune_removes_the_commit_a_branch_left_and_keeps_the_current_one(hub, published, tmp_path):
    uri, files = published
    ref = parse_source(uri, "X")
    first = HFFetcher().fetch(ref, context(hub, tmp_path))
    hub.hub.repos.add(ref.location, {**files, "config.json": b'{"pushed": 1}'})
    second = HFFetcher().fetch(ref, context(hub, tmp_path))
    # Left minutes ago: a day's rule keeps it; a dry run with 0 days names it and removes nothing.
    assert [(r["kind"], r["key"], r["action"]) for r in prune_cli(hub, tmp_path, "--older-than", "1")] == [
        ("commit", first.parent.name, "kept: superseded recently")
    ]
    assert [r["action"] for r in prune_cli(hub, tmp_path, "--older-than", "0", "--dry-run")] == ["would remove"]
    assert first.is_dir()
    rows = prune_cli(hub, tmp_path, "--older-than", "0")
    assert [(r["key"], r["action"]) for r in rows] == [(first.parent.name, "removed")]
    assert not first.parent.exists() and tree_bytes(second)["config.json"] == b'{"pushed": 1}'
    assert HFFetcher().fetch(ref, context(hub, tmp_path, offline=True)) == second
    assert prune_cli(hub, tmp_path, "--older-than", "0") == []  # the current commit is never a candidate


def test_prune_counts_a_start_by_commit_id_as_a_use(hub, published, tmp_path):
    uri, files = published
    ref = parse_source(uri, "X")
    first = HFFetcher().fetch(ref, context(hub, tmp_path))
    commit = json.loads((first.parent / "complete.json").read_text())["commit"]
    hub.hub.repos.add(ref.location, {**files, "config.json": b'{"pushed": 2}'})
    HFFetcher().fetch(ref, context(hub, tmp_path))
    layout = CacheLayout.under(tmp_path)
    since = branch_refs.read_ref(layout, ref).since
    time_of_pin = since + 5.0
    branch_refs.record(layout, parse_source(f"{uri}@{commit}", "X"), commit, time_of_pin)
    from nim_specdec.fetchers.hub.prune_commits import prune_commits

    (state,) = prune_commits(layout, older_than_s=10.0, now=since + 12.0)  # 12 s after the move, 7 after the pin
    assert state.key == first.parent.name and state.action == "kept: superseded recently"
    assert state.last_used == time_of_pin
    (state,) = prune_commits(layout, older_than_s=10.0, now=time_of_pin + 10.0)
    assert state.action == "removed" and not first.parent.exists()


@pytest.mark.parametrize("ahead_s", [3600.0, 365 * 86400.0, float("inf")])
def test_a_record_stamped_ahead_of_the_clock_is_no_later_answer(tmp_path, ahead_s):
    """A fifth round's class: a record's time was believed however far ahead of this host's clock it was, so a
    record stamped a year ahead (a node's clock, or a tenant of a vouched volume) outranked every real answer:
    record() kept it and the Hub's newer commit was never written."""
    import time

    layout = CacheLayout.under(tmp_path)
    layout.root.mkdir(parents=True, mode=0o700)
    ref = parse_source("hf://org/name@dev", "X")
    path = branch_refs.ref_path(layout, ref)
    path.parent.mkdir(parents=True, mode=0o700)
    stamp = time.time() + ahead_s
    path.write_text(json.dumps({"uri": "hf://org/name@dev", "commit": "a" * 40, "resolved_at": stamp, "since": stamp}))
    assert branch_refs.read_ref(layout, ref) is None
    branch_refs.record(layout, ref, "b" * 40, resolved_at=time.time())
    assert branch_refs.read_ref(layout, ref).commit == "b" * 40


def test_a_record_within_the_clock_skew_is_still_a_later_answer(tmp_path):
    import time

    layout = CacheLayout.under(tmp_path)
    layout.root.mkdir(parents=True, mode=0o700)
    ref = parse_source("hf://org/name@dev", "X")
    branch_refs.record(layout, ref, "a" * 40, resolved_at=time.time() + branch_refs.CLOCK_SKEW_S / 2)
    branch_refs.record(layout, ref, "b" * 40, resolved_at=time.time())
    assert branch_refs.read_ref(layout, ref).commit == "a" * 40
