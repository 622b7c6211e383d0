"""`nim-specdec cache prune`: old compile-cache keys go, keys in use or used recently stay, nothing is
followed through a link, and an untrusted compile/ is left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nim_specdec.engines.vllm.release.compile_dirs import compile_cache_plan
from nim_specdec.errors import ConfigError
from nim_specdec.launch.compile_cache.claim import LOCK, claim
from nim_specdec.launch.compile_cache.prune import prune

DAY = 86400.0


def key_dir(cache: Path, key: str, age_days: float | None, payload: int = 1000) -> Path:
    """A key as a writer leaves it: caches under it and a lock file last touched `age_days` ago."""
    root = cache / "compile" / key
    (root / "vllm").mkdir(parents=True)
    (root / "vllm" / "artefact.so").write_bytes(b"x" * payload)
    if age_days is not None:
        (root / LOCK).touch()
        then = time.time() - age_days * DAY
        os.utime(root / LOCK, (then, then))
    return root


def actions(states) -> dict[str, str]:
    return {s.key: s.action for s in states}


def test_old_keys_go_recent_ones_stay_and_a_dry_run_removes_nothing(tmp_path):
    old, recent = key_dir(tmp_path, "old", 30, payload=5000), key_dir(tmp_path, "recent", 1)
    dry = prune(tmp_path / "compile", 14 * DAY, time.time(), dry_run=True)
    assert actions(dry) == {"old": "would remove", "recent": "kept: used recently"}
    assert old.is_dir()
    done = prune(tmp_path / "compile", 14 * DAY, time.time())
    assert actions(done) == {"old": "removed", "recent": "kept: used recently"}
    assert not old.exists() and recent.is_dir()
    assert next(s for s in done if s.key == "old").size_bytes >= 5000
    assert sorted(p.name for p in (tmp_path / "compile").iterdir()) == ["recent"]  # no trash left behind


def test_a_key_whose_lock_a_server_holds_is_never_removed(tmp_path):
    entry = compile_cache_plan(str(tmp_path), "live", ())
    claim(entry, warn=lambda _: None, info=lambda _: None)  # this process is now the writer, as a server is
    then = time.time() - 30 * DAY
    os.utime(Path(entry.dir) / LOCK, (then, then))
    assert actions(prune(tmp_path / "compile", 0.0, time.time())) == {"live": "kept: in use"}
    assert Path(entry.dir, "vllm").is_dir()


def test_a_start_marks_the_key_as_used(tmp_path):
    root = key_dir(tmp_path, "k", 30)
    holder = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import sys; from nim_specdec.engines.vllm.release.compile_dirs import compile_cache_plan;"
                "from nim_specdec.launch.compile_cache.claim import claim;"
                f"claim(compile_cache_plan({str(tmp_path)!r}, 'k', ()), warn=print, info=print)"
            ),
        ],
        timeout=60,
    )
    assert holder.returncode == 0
    assert time.time() - os.stat(root / LOCK).st_mtime < 60
    assert actions(prune(tmp_path / "compile", 14 * DAY, time.time())) == {"k": "kept: used recently"}


def test_links_are_never_followed(tmp_path):
    outside = tmp_path / "outside"
    (outside / "vllm").mkdir(parents=True)
    (outside / "keep.txt").write_text("not the cache's")
    (tmp_path / "compile").mkdir()
    (tmp_path / "compile" / "linked").symlink_to(outside)  # a key that is a link
    root = key_dir(tmp_path, "lock-link", None)
    (root / LOCK).symlink_to(outside / "keep.txt")  # a lock that is a link
    inner = key_dir(tmp_path, "inner-link", 30)
    (inner / "vllm" / "escape").symlink_to(outside)  # a link inside an old key
    states = actions(prune(tmp_path / "compile", 0.0, time.time()))
    assert states == {
        "inner-link": "removed",
        "linked": "kept: a link or not a directory",
        "lock-link": "kept: a link or not a directory",
    }
    assert (outside / "keep.txt").read_text() == "not the cache's" and (outside / "vllm").is_dir()


def test_a_compile_dir_others_may_write_is_left_alone(tmp_path):
    old = key_dir(tmp_path, "old", 30)
    os.chmod(tmp_path / "compile", 0o777)
    with pytest.raises(ConfigError, match="may be written by other users"):
        prune(tmp_path / "compile", 0.0, time.time())
    assert old.is_dir()


def test_no_compile_dir_is_nothing_to_do(tmp_path):
    assert prune(tmp_path / "compile", 0.0, time.time()) == []


def run_cli(cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")} | {"NIM_CACHE_PATH": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "cache", "prune", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("days", ["x", "-1", "nan", "inf", ""])
def test_cli_refuses_a_bad_age_in_one_line(tmp_path, days):
    done = run_cli(tmp_path, "--older-than", days)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--older-than" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_reports_each_key_as_json(tmp_path):
    key_dir(tmp_path, "old", 30)
    key_dir(tmp_path, "recent", 1)
    done = run_cli(tmp_path, "--older-than", "7", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["key"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert rows["old"]["action"] == "removed" and rows["recent"]["action"] == "kept: used recently"
    assert not (tmp_path / "compile" / "old").exists()


@pytest.mark.parametrize(
    "plant,action",
    [
        (lambda p: p.mkdir(), "kept: its lock is not a regular file"),
        (lambda p: os.mkfifo(p), "kept: its lock is not a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "kept: a link or not a directory"),
    ],
)
def test_a_lock_that_is_not_a_file_keeps_the_key_without_blocking(tmp_path, plant, action):
    root = key_dir(tmp_path, "odd", None)
    plant(root / LOCK)
    os.utime(root, (time.time() - 30 * DAY,) * 2)
    assert actions(prune(tmp_path / "compile", 7 * DAY, time.time())) == {"odd": action}
    assert root.is_dir()


def test_keys_whose_names_are_not_utf8_are_listed_escaped(tmp_path):
    key_dir(tmp_path, "ok", 1)
    os.mkdir(os.fsencode(tmp_path / "compile") + b"/bad\xff\x1b")
    os.makedirs(os.fsencode(tmp_path) + b"/sources/entries/s3--bad\xff--0123", mode=0o700)
    os.chmod(tmp_path / "sources", 0o700)
    os.chmod(tmp_path / "sources" / "entries", 0o700)
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src"),
        "NIM_CACHE_PATH": str(tmp_path),
    }
    for args in (["prune", "--older-than", "7"], ["prune", "--older-than", "7", "--json"], ["ls"], ["ls", "--json"]):
        done = subprocess.run(
            [sys.executable, "-m", "nim_specdec", "cache", *args], env=env, capture_output=True, timeout=60
        )
        assert done.returncode == 0, (args, done.stderr)
        done.stdout.decode("utf-8")  # printable text, whatever the names on disk
        assert b"\x1b" not in done.stdout
        if args[0] == "prune" and "--json" not in args:
            assert b"bad\\udcff\\x1b" in done.stdout, done.stdout
