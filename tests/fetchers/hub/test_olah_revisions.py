"""hf:// branches, tags and commits against olah, a Hub server from PyPI serving git repositories on loopback.

Every case runs `nim-specdec` as a user would (a subprocess); none needs vLLM but the one `prepare`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nim_specdec.errors import EXIT_MATERIALIZE
from servers.fault_proxy import Fault, FaultProxy
from servers.harness import SRC, WEIGHTS, tree_bytes
from servers.harness import TINY_LLAMA_CONFIG as CONFIG
from servers.olah_hub import OlahHub


def files(tag: str, weights: int = 4096) -> dict[str, bytes]:
    """A model whose every file differs per `tag`; weights (LFS-sized) and a tokenizer in subfolders."""
    return {
        "config.json": json.dumps({**CONFIG, "tag": tag}).encode(),
        WEIGHTS: os.urandom(weights),
        "tokenizer/tokenizer.json": json.dumps({"tag": tag}).encode(),
        "extra/nested/notes.txt": tag.encode(),
    }


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    started = OlahHub(tmp_path_factory.mktemp("olah")).start()
    yield started
    started.stop()


def new_repo(hub: OlahHub):
    return hub.repo(f"org/m{uuid.uuid4().hex[:10]}")


def env_for(endpoint: str, cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "NIM_", "HUGGING"))}
    env.update(
        {
            "HF_ENDPOINT": endpoint,
            "NIM_CACHE_PATH": str(cache),
            "PYTHONPATH": str(SRC),
            "NIM_DOWNLOAD_RETRIES": "1",
            "NIM_DOWNLOAD_TIMEOUT": "10",
            # Every start asks the Hub: these cases push between starts (test_olah_fallback.py follows a branch).
            "NIM_HF_BRANCH_FOLLOW_S": "0",
            **extra,
        }
    )
    return env


def cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def download(env: dict[str, str], uri: str) -> Path:
    done = cli(env, "download", uri)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def marker(files_dir: Path) -> dict:
    return json.loads((files_dir.parent / "complete.json").read_text())


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("nim-specdec: error:")]


def test_a_branch_is_downloaded_as_its_commit(hub, tmp_path):
    repo = new_repo(hub)
    repo.commit(files("main"))
    dev_files = files("dev")
    dev = repo.commit(dev_files, branch="dev")
    done = cli(env_for(hub.url, tmp_path), "download", f"hf://{repo.name}@dev")
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    assert tree_bytes(path) == dev_files
    assert marker(path)["commit"] == dev and marker(path)["requested"] == f"hf://{repo.name}@dev"
    assert dev in path.parent.name
    assert f"dev is commit {dev}" in done.stderr


def test_a_tag_is_downloaded_as_its_commit_after_the_branch_moved(hub, tmp_path):
    repo = new_repo(hub)
    v1_files = files("v1")
    v1 = repo.commit(v1_files)
    repo.tag("v1.0", v1)
    repo.commit(files("later"))
    path = download(env_for(hub.url, tmp_path), f"hf://{repo.name}@v1.0")
    assert tree_bytes(path) == v1_files and marker(path)["commit"] == v1


def test_a_commit_is_served_from_the_cache_without_asking(hub, tmp_path):
    repo = new_repo(hub)
    first_files = files("first")
    first = repo.commit(first_files)
    repo.commit(files("second"))
    path = download(env_for(hub.url, tmp_path), f"hf://{repo.name}@{first}")
    assert tree_bytes(path) == first_files and marker(path)["commit"] == first
    # Downloads allowed, but the endpoint is a closed port: a cached commit needs no request at all.
    closed = f"http://127.0.0.1:{_closed_port()}"
    again = cli(env_for(closed, tmp_path), "download", f"hf://{repo.name}@{first}")
    assert again.returncode == 0 and Path(again.stdout.strip()) == path, again.stderr
    # A branch cannot be served that way: it must be asked, and the failure is one line, exit 3.
    branch = cli(env_for(closed, tmp_path, NIM_DOWNLOAD_RETRIES="0"), "download", f"hf://{repo.name}")
    assert branch.returncode == EXIT_MATERIALIZE and len(error_lines(branch.stderr)) == 1, branch.stderr
    assert "cannot resolve 'main' to a commit" in branch.stderr and "Traceback" not in branch.stderr


def test_files_in_subfolders_arrive_at_their_paths(hub, tmp_path):
    repo = new_repo(hub)
    nested = {
        "config.json": b"{}",
        "weights/part-1/model.safetensors": os.urandom(3000),
        "a/b/c/d.json": b'{"deep": true}',
    }
    commit = repo.commit(nested)
    path = download(env_for(hub.url, tmp_path), f"hf://{repo.name}")
    assert tree_bytes(path) == nested and marker(path)["commit"] == commit


def test_a_commit_pushed_between_two_starts_is_served_by_the_second(hub, tmp_path):
    repo = new_repo(hub)
    old_files, new_files = files("old"), files("new")
    old = repo.commit(old_files)
    env = env_for(hub.url, tmp_path)
    first = download(env, f"hf://{repo.name}")
    new = repo.commit(new_files)
    second = download(env, f"hf://{repo.name}")
    assert tree_bytes(first) == old_files and tree_bytes(second) == new_files and first != second
    listing = [json.loads(line) for line in cli(env, "cache", "ls", "--json").stdout.splitlines()]
    assert sorted(e["commit"] for e in listing) == sorted([old, new])  # the old commit stays
    assert {e["requested"] for e in listing} == {f"hf://{repo.name}@main"}
    table = cli(env, "cache", "ls").stdout
    assert f"hf://{repo.name}@{new} (as hf://{repo.name}@main)" in table and f"@{old} (as" in table
    for offline in ({"NIM_DISABLE_MODEL_DOWNLOAD": "1"}, {"HF_HUB_OFFLINE": "1"}):
        done = cli(env_for(f"http://127.0.0.1:{_closed_port()}", tmp_path, **offline), "download", f"hf://{repo.name}")
        assert done.returncode == 0 and Path(done.stdout.strip()) == second, done.stderr
        served = [line for line in done.stderr.splitlines() if "downloads are disabled" in line]
        assert len(served) == 1 and f"serving commit {new}" in served[0], done.stderr


def test_missing_repository_is_one_line_exit_3(hub, tmp_path):
    done = cli(env_for(hub.url, tmp_path), "download", "hf://org/no-such-repo")
    assert done.returncode == EXIT_MATERIALIZE, done.stderr
    lines = error_lines(done.stderr)
    assert len(lines) == 1 and "hf://org/no-such-repo@main" in lines[0] and "not found" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not list(tmp_path.rglob("complete.json"))


def test_missing_revision_is_one_line_exit_3(hub, tmp_path):
    repo = new_repo(hub)
    repo.commit(files("only"))
    done = cli(env_for(hub.url, tmp_path), "download", f"hf://{repo.name}@no-such-branch")
    assert done.returncode == EXIT_MATERIALIZE, done.stderr
    lines = error_lines(done.stderr)
    # olah answers 401 where the Hub answers 404 RevisionNotFound (the Hub stub's tests check that message).
    assert len(lines) == 1 and f"hf://{repo.name}@no-such-branch" in lines[0], done.stderr
    assert "Traceback" not in done.stderr and not list(tmp_path.rglob("complete.json"))


def test_server_killed_mid_download_leaves_the_old_commit_served(tmp_path):
    """olah and the loopback proxy in front of it go away while the new commit's weights are arriving: the
    start fails with one line (exit 3), nothing of the new commit is cached, an offline start serves the old."""
    hub = OlahHub(tmp_path / "olah").start()
    proxy = FaultProxy(hub.url).start()
    try:
        repo = new_repo(hub)
        old_files = files("old")
        old = repo.commit(old_files)
        env = env_for(proxy.url, tmp_path / "cache")
        first = download(env, f"hf://{repo.name}")
        repo.commit(files("new", weights=400_000))
        proxy.reset()  # forget the first download's requests
        proxy.inject(Fault("slow", WEIGHTS, times=-1, bytes_per_second=40_000))  # 10 s for the weights
        # No retry of ours: huggingface_hub's own resumes (five, a second apart) already meet the dead server.
        started = subprocess.Popen(
            [sys.executable, "-m", "nim_specdec", "download", f"hf://{repo.name}"],
            env={**env, "NIM_DOWNLOAD_RETRIES": "0"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not proxy.requests("GET", WEIGHTS) and time.monotonic() < deadline and started.poll() is None:
            time.sleep(0.05)
        time.sleep(1.0)  # some of the weights are on disk now
        assert started.poll() is None, "the download ended before the server could be killed"
        hub.stop(kill=True)
        proxy.close()
        out, err = started.communicate(timeout=120)
    finally:
        hub.stop(kill=True)
    assert started.returncode == EXIT_MATERIALIZE, err
    lines = error_lines(err)
    assert len(lines) == 1 and "download failed" in lines[0] and "Traceback" not in err, err
    layout = tmp_path / "cache" / "sources"
    assert [p.parent for p in layout.rglob("complete.json")] == [first.parent]
    assert list((layout / "tmp").iterdir()) == []  # the failed download removed what it had written
    offline_env = env_for(proxy.url, tmp_path / "cache", NIM_DISABLE_MODEL_DOWNLOAD="1")
    offline = cli(offline_env, "download", f"hf://{repo.name}")
    assert offline.returncode == 0 and Path(offline.stdout.strip()) == first and tree_bytes(first) == old_files
    assert f"serving commit {old}" in offline.stderr


def test_plan_and_prepare_record_the_commit(hub, tmp_path):
    """`plan` (no network) shows the commits the cache holds for the branches; `prepare` asks, fetches the
    commits pushed since, links them into the workspace, has vLLM judge them and records them."""
    target, draft = new_repo(hub), new_repo(hub)
    old_target, old_draft = target.commit(files("old")), draft.commit(files("old-draft"))
    uris = f"hf://{target.name}", f"hf://{draft.name}"
    env = env_for(
        hub.url,
        tmp_path / "cache",
        NIM_MODEL_PATH=uris[0],
        NIM_DRAFT_MODEL_PATH=uris[1],
        NIM_SPECDEC_PREFLIGHT="off",
        NIM_WORKSPACE=str(tmp_path / "ws"),
    )
    draft_model = {"method": "draft_model", "model": "my_draft", "num_speculative_tokens": 2}
    spec = ["--speculative-config", json.dumps(draft_model)]
    for uri in uris:
        download(env, uri)
    new_files, new_draft_files = files("new"), files("new-draft")
    new_target, new_draft = target.commit(new_files), draft.commit(new_draft_files)
    planned = cli(env, "plan", *spec)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert (plan["target"]["commit"], plan["draft"]["commit"]) == (old_target, old_draft)
    assert plan["target"]["commit_reason"].startswith("the Hub is asked at start which commit main names; if it")
    assert f"cached commit {old_draft} (resolved " in plan["draft"]["commit_reason"]
    prepared = cli(env, "prepare", *spec, timeout=300)
    assert prepared.returncode == 0, prepared.stderr
    plan = json.loads(prepared.stdout)
    assert (plan["target"]["commit"], plan["draft"]["commit"]) == (new_target, new_draft)
    assert plan["draft"]["commit_reason"] == f"the Hub answered at start: main is commit {new_draft}"
    assert plan["target"]["source"] == uris[0] and plan["draft"]["source"] == uris[1]
    assert plan["vllm_check"]["ran"] is True, prepared.stderr
    for key, link, expected in (("target", "target", new_files), ("draft", "my_draft", new_draft_files)):
        assert tree_bytes(Path(plan[key]["local_dir"])) == expected
        assert (tmp_path / "ws" / link).resolve() == Path(plan[key]["local_dir"]).resolve()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
