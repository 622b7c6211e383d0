"""The LeaderWorkerSet's `sh -c` scripts check every number they count with or pass on before using it: the
group size (one a cluster can have), the worker's index (inside the group), the rendezvous port and the
leader's wait (an unset or empty attempt count takes its default; a word is refused), each as one line, exit 2.
Run as the shell scripts they are, with `getent` and `nim-specdec` as recorders on PATH."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
from k8s_manifests import K8S_DIR, by_kind, container_env, documents, pod_specs

LWS_FILE = K8S_DIR / "multinode" / "leaderworkerset.yaml"
LWS_ENV = {
    "LWS_LEADER_ADDRESS": "nim-specdec-multinode-0.nim-specdec-multinode.nim-specdec",
    "LWS_GROUP_SIZE": "2",
    "LWS_WORKER_INDEX": "1",
}
UNSET = object()


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(tmp_path: Path, role: str, changes: dict, resolves: bool = True) -> tuple[subprocess.CompletedProcess, int]:
    docs = documents(LWS_FILE)
    (lws,) = by_kind(docs, "LeaderWorkerSet")
    container = dict(pod_specs(lws))[role]["containers"][0]
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    calls.write_text("")
    answer = 'echo "10.0.0.2 $2"' if resolves else "exit 2"
    _stub(bin_dir, "getent", f'echo "$2" >> "{calls}"\n{answer}\n')
    _stub(bin_dir, "nim-specdec", f'printf "%s\\n" "$@" > "{tmp_path}/argv"\n')
    env = {**container_env(container, docs), **LWS_ENV, "WORKER_WAIT_SECONDS": "0", "PATH": f"{bin_dir}:/usr/bin:/bin"}
    for key, value in changes.items():
        env.pop(key) if value is UNSET else env.__setitem__(key, value)
    done = subprocess.run(
        ["sh", "-c", container["command"][2], container["command"][3], *container["args"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,  # an endless wait fails here
    )
    return done, len(calls.read_text().splitlines())


@pytest.mark.parametrize("value", [UNSET, ""])
def test_an_unset_or_empty_attempt_count_takes_its_default_and_the_wait_ends(tmp_path, value):
    done, lookups = _run(tmp_path, "leader", {"WORKER_WAIT_ATTEMPTS": value}, resolves=False)
    assert done.returncode == 4 and lookups == 180, (done.stderr, lookups)
    assert len(done.stderr.strip().splitlines()) == 1 and "after 180 tries" in done.stderr


@pytest.mark.parametrize(
    "role,variable,value",
    [
        ("leader", "WORKER_WAIT_ATTEMPTS", "abc"),
        ("leader", "WORKER_WAIT_ATTEMPTS", "0"),
        ("leader", "WORKER_WAIT_ATTEMPTS", "-1"),
        ("leader", "WORKER_WAIT_ATTEMPTS", "9" * 30),
        ("leader", "WORKER_WAIT_SECONDS", "1e3"),
        ("leader", "LWS_GROUP_SIZE", "abc"),
        ("leader", "LWS_GROUP_SIZE", "0"),
        ("leader", "LWS_GROUP_SIZE", "100000000000"),
        ("leader", "LWS_GROUP_SIZE", ""),
        ("leader", "MASTER_PORT", "70000"),
        ("leader", "MASTER_PORT", "$(id)\n; x"),
        ("worker", "LWS_GROUP_SIZE", "100000000000"),
        ("worker", "LWS_GROUP_SIZE", "1"),
        ("worker", "LWS_WORKER_INDEX", "2"),
        ("worker", "LWS_WORKER_INDEX", "0"),
        ("worker", "LWS_WORKER_INDEX", "one"),
        ("worker", "MASTER_PORT", "0"),
    ],
)
def test_a_bad_number_is_one_line_exit_2_before_anything_starts(tmp_path, role, variable, value):
    done, lookups = _run(tmp_path, role, {variable: value})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"nim-specdec: error: {variable}: "), lines
    assert "is not a whole number from" in lines[0] and lookups == 0
    assert not (tmp_path / "argv").exists(), "nothing started"


def test_good_values_start_the_rank(tmp_path):
    done, _ = _run(tmp_path, "worker", {"LWS_GROUP_SIZE": "4", "LWS_WORKER_INDEX": "3"})
    argv = (tmp_path / "argv").read_text().splitlines()
    assert done.returncode == 0 and argv[argv.index("--node-rank") + 1] == "3", done.stderr
