"""hf:// branches when the Hub cannot answer, and a rollout that follows one commit: olah (a Hub server from
PyPI) on loopback, stopped, or behind the fault proxy answering 401, 503 or nothing; `nim-specdec` run as a
user would (a subprocess). Only the first case runs vLLM's own check (`prepare`); the rest `download`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fetchers.hub.test_olah_revisions as olah
from nim_specdec.errors import EXIT_MATERIALIZE
from servers.fault_proxy import Fault, FaultProxy
from servers.harness import WEIGHTS, tree_bytes
from servers.olah_hub import OlahHub

REVOKED_TOKEN = "hf_revokedTokenValue0123456789"
# What the Hub answers a request signed with a revoked or invalid token.
HUB_401 = Fault(
    "status",
    "/api/models/",
    times=-1,
    status=401,
    headers=(("Content-Type", "application/json"), ("X-Error-Message", "Invalid credentials in Authorization header")),
    body=b'{"error": "Invalid credentials in Authorization header"}',
)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    started = OlahHub(tmp_path_factory.mktemp("olah")).start()
    yield started
    started.stop()


@pytest.fixture
def proxy(hub):
    started = FaultProxy(hub.url).start()
    yield started
    started.close()


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("WARNING")]


def served(done: subprocess.CompletedProcess) -> Path:
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def entries(cache: Path) -> list[Path]:
    return sorted(p.parent for p in (cache / "sources").rglob("complete.json"))


def asked(proxy: FaultProxy) -> list[str]:
    """The metadata requests that ask which commit a revision names."""
    return [r.path for r in proxy.state.records if "/api/models/" in r.path and "/revision/" in r.path]


def file_requests(proxy: FaultProxy) -> list[str]:
    return [r.path for r in proxy.state.records if "/resolve/" in r.path or "/tree/" in r.path]


def test_a_cached_branch_is_served_with_the_hub_stopped(tmp_path):
    """A pod restarts while the Hub is down: `plan` says what will happen, `prepare` serves the cached commit
    with one warning, downloads nothing, and vLLM's check passes on it."""
    hub = OlahHub(tmp_path / "olah").start()
    try:
        repo = olah.new_repo(hub)
        cached_files = olah.files("cached")
        cached = repo.commit(cached_files)
        uri = f"hf://{repo.name}"
        env = olah.env_for(
            hub.url,
            tmp_path / "cache",
            NIM_MODEL_PATH=uri,
            NIM_SPECDEC_PREFLIGHT="off",
            NIM_WORKSPACE=str(tmp_path / "ws"),
        )
        first = served(olah.cli(env, "download", uri))
        repo.commit(olah.files("pushed while down"))  # were the Hub asked, it would name another commit
    finally:
        hub.stop()
    planned = olah.cli(env, "plan")
    assert planned.returncode == 0, planned.stderr
    target = json.loads(planned.stdout)["target"]
    assert target["commit"] == cached
    assert f"cannot answer within NIM_HF_RESOLVE_TIMEOUT_S=10s, cached commit {cached}" in target["commit_reason"]
    prepared = olah.cli(env, "prepare", timeout=300)
    assert prepared.returncode == 0, prepared.stderr
    plan = json.loads(prepared.stdout)
    assert plan["target"]["commit"] == cached and plan["vllm_check"]["ran"] is True, prepared.stderr
    assert tree_bytes(Path(plan["target"]["local_dir"])) == cached_files
    (warning,) = warnings(prepared.stderr)
    assert f"{uri}@main: serving commit {cached} from the cache, resolved " in warning
    assert "it cannot be reached" in warning and "Connection refused" in warning, warning
    assert "retrying" not in prepared.stderr  # a cached commit: the Hub is asked once, no backoff runs
    assert plan["target"]["commit_reason"].startswith(f"serving commit {cached} from the cache")
    assert entries(tmp_path / "cache") == [first.parent]  # nothing downloaded
    assert list((tmp_path / "cache" / "sources" / "tmp").iterdir()) == []
    assert "Traceback" not in prepared.stderr


def test_a_revoked_token_is_answered_with_the_cached_commit(hub, proxy, tmp_path):
    repo = olah.new_repo(hub)
    cached_files = olah.files("cached")
    cached = repo.commit(cached_files)
    uri = f"hf://{repo.name}"
    env = olah.env_for(proxy.url, tmp_path, HF_TOKEN=REVOKED_TOKEN)
    first = served(olah.cli(env, "download", uri))
    repo.commit(olah.files("pushed"))
    proxy.reset()
    proxy.inject(HUB_401)
    done = olah.cli(env, "download", uri)
    assert served(done) == first and tree_bytes(first) == cached_files
    (warning,) = warnings(done.stderr)
    assert f"serving commit {cached} from the cache" in warning and "401" in warning, warning
    assert "check HF_TOKEN" in warning
    assert REVOKED_TOKEN not in done.stderr and REVOKED_TOKEN[3:15] not in done.stderr
    assert len(asked(proxy)) == 1 and file_requests(proxy) == []  # a 401 is not retried; nothing downloaded
    assert entries(tmp_path) == [first.parent]


@pytest.mark.parametrize(
    "fault, extra, why",
    [
        (Fault("status", "/api/models/", times=-1, status=503), {}, "it failed: "),
        (Fault("stall", "/api/models/", times=-1), {"NIM_HF_RESOLVE_TIMEOUT_S": "2"}, "no answer within"),
    ],
    ids=["503", "no-answer"],
)
def test_a_failing_or_silent_hub_is_answered_with_the_cached_commit(hub, proxy, tmp_path, fault, extra, why):
    repo = olah.new_repo(hub)
    cached = repo.commit(olah.files("cached"))
    uri = f"hf://{repo.name}"
    # A download timeout far above the resolution's: the start waits NIM_HF_RESOLVE_TIMEOUT_S, not this.
    env = olah.env_for(proxy.url, tmp_path, NIM_DOWNLOAD_TIMEOUT="120", **extra)
    first = served(olah.cli(env, "download", uri))
    proxy.reset()
    proxy.inject(fault)
    done = olah.cli(env, "download", uri)
    assert served(done) == first
    (warning,) = warnings(done.stderr)
    assert f"serving commit {cached} from the cache" in warning and why in warning, warning
    if "NIM_HF_RESOLVE_TIMEOUT_S" in extra:
        assert "NIM_HF_RESOLVE_TIMEOUT_S=2s" in warning
    assert len(asked(proxy)) == 1 and "retrying" not in done.stderr  # a cached commit: asked once, no backoff
    assert file_requests(proxy) == [] and entries(tmp_path) == [first.parent]


def test_with_nothing_complete_cached_the_start_fails_as_before(hub, proxy, tmp_path):
    """Another branch of the repository is cached, main is not: the Hub down or refusing is exit 3, one line."""
    repo = olah.new_repo(hub)
    repo.commit(olah.files("main"))
    repo.commit(olah.files("dev"), branch="dev")
    env = olah.env_for(proxy.url, tmp_path, HF_TOKEN=REVOKED_TOKEN)
    served(olah.cli(env, "download", f"hf://{repo.name}@dev"))
    proxy.inject(HUB_401)
    refused = olah.cli(env, "download", f"hf://{repo.name}")
    assert refused.returncode == EXIT_MATERIALIZE and warnings(refused.stderr) == [], refused.stderr
    (line,) = olah.error_lines(refused.stderr)
    assert f"hf://{repo.name}@main" in line and "not accessible" in line and REVOKED_TOKEN not in refused.stderr
    closed = f"http://127.0.0.1:{olah._closed_port()}"
    down = olah.cli(olah.env_for(closed, tmp_path, NIM_DOWNLOAD_RETRIES="0"), "download", f"hf://{repo.name}")
    assert down.returncode == EXIT_MATERIALIZE and warnings(down.stderr) == [], down.stderr
    (line,) = olah.error_lines(down.stderr)
    assert "cannot resolve 'main' to a commit" in line and "Traceback" not in down.stderr
    assert len(entries(tmp_path)) == 1


def test_a_rollout_follows_the_commit_the_first_start_resolved(hub, proxy, tmp_path):
    """Pods of one rollout share the cache: a push during the rollout reaches none of them until the window
    ends, whether the first pod is still downloading or done; NIM_HF_BRANCH_FOLLOW_S=0 asks again."""
    warm = olah.new_repo(hub)
    warm.commit(olah.files("warm"))
    repo = olah.new_repo(hub)
    first_files = olah.files("first", weights=400_000)
    first = repo.commit(first_files)
    uri = f"hf://{repo.name}"
    env = olah.env_for(proxy.url, tmp_path)
    env.pop("NIM_HF_BRANCH_FOLLOW_S")  # the default window
    served(olah.cli(env, "download", f"hf://{warm.name}"))  # the volume has been used before
    proxy.reset()
    proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=80_000))  # about 5 s for the weights
    pod1 = subprocess.Popen(
        [sys.executable, "-m", "nim_specdec", "download", uri], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while not proxy.requests("GET", WEIGHTS) and time.monotonic() < deadline and pod1.poll() is None:
        time.sleep(0.05)
    assert pod1.poll() is None, "the first pod finished before the second started"
    pushed_files = olah.files("pushed")
    pushed = repo.commit(pushed_files)
    pod2 = olah.cli(env, "download", uri)  # waits for the first pod's download of the same commit
    out1, err1 = pod1.communicate(timeout=120)
    assert pod1.returncode == 0, err1
    assert served(pod2) == Path(out1.decode().strip()) and tree_bytes(served(pod2)) == first_files
    assert f"serving commit {first}, which a start sharing this cache resolved main to" in pod2.stderr
    assert len(asked(proxy)) == 1, asked(proxy)  # the first pod's question only
    proxy.reset()
    pod3 = olah.cli(env, "download", uri)  # the download is over: still followed
    assert tree_bytes(served(pod3)) == first_files and asked(proxy) == []
    asking = olah.cli({**env, "NIM_HF_BRANCH_FOLLOW_S": "0"}, "download", uri)
    assert tree_bytes(served(asking)) == pushed_files and f"main is commit {pushed}" in asking.stderr
    assert warnings(pod2.stderr) == warnings(pod3.stderr) == warnings(asking.stderr) == []


def test_a_pod_that_died_downloading_the_followed_commit_leaves_the_cached_one_served(tmp_path):
    """The first pod of a rollout resolves a push and is killed mid-download; then the Hub goes down. The next
    pod follows the pushed commit, cannot fetch it, and serves the cached one with one warning."""
    hub = OlahHub(tmp_path / "olah").start()
    proxy = FaultProxy(hub.url).start()
    try:
        repo = olah.new_repo(hub)
        old_files = olah.files("old")
        old = repo.commit(old_files)
        uri = f"hf://{repo.name}"
        env = olah.env_for(proxy.url, tmp_path / "cache", NIM_DOWNLOAD_RETRIES="0")
        env.pop("NIM_HF_BRANCH_FOLLOW_S")  # the default window
        first = served(olah.cli({**env, "NIM_HF_BRANCH_FOLLOW_S": "0"}, "download", uri))
        new = repo.commit(olah.files("new", weights=400_000))
        proxy.reset()
        proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=40_000))
        pod1 = subprocess.Popen(
            [sys.executable, "-m", "nim_specdec", "download", uri],
            env={**env, "NIM_HF_BRANCH_FOLLOW_S": "0"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not proxy.requests("GET", WEIGHTS) and time.monotonic() < deadline and pod1.poll() is None:
            time.sleep(0.05)
        assert pod1.poll() is None, "the first pod ended before it could be killed"
        pod1.kill()
        _, err1 = pod1.communicate(timeout=30)
        assert f"main is commit {new}" in err1
    finally:
        hub.stop(kill=True)
        proxy.close()
    pod2 = olah.cli(env, "download", uri)
    assert served(pod2) == first and tree_bytes(first) == old_files
    assert f"serving commit {new}, which a start sharing this cache resolved main to" in pod2.stderr
    (warning,) = warnings(pod2.stderr)
    assert f"serving commit {old} from the cache" in warning and f"commit {new}, which a start" in warning
    assert entries(tmp_path / "cache") == [first.parent]
