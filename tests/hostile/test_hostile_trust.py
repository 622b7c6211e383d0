"""Trust by handle: a cache or workspace under a folder others can write without the sticky bit is refused,
every folder we make is owner-only whatever the umask, prune acts on the folder it checked (never on a
link swapped in meanwhile), users' data files are 0600, and the target is named in one place only."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from test_hostile_inputs import EAGLE, models

from fuzz_plan_cases import Case, run_case
from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, ConfigError, MaterializeError
from nim_specdec.fetchers.download.materialize import Job, RemoteFile, materialize
from nim_specdec.launch.compile_cache import prune as compile_cache_prune
from nim_specdec.launch.compile_cache.claim import LOCK
from nim_specdec.launch.workspace import ensure_workspace
from servers.harness import context_for


class OneFile:
    def download(self, job: Job) -> list[RemoteFile]:
        (job.dest / "config.json").write_bytes(b"{}")
        return [RemoteFile("config.json", 2)]

    def is_transient(self, err: BaseException) -> bool:
        return False


def fetch(cache_dir: Path) -> Path:
    return materialize(parse_source("s3://bucket/d", "NIM_DRAFT_MODEL_PATH"), context_for({}, cache_dir), OneFile())


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_cache_under_a_folder_others_can_write_without_the_sticky_bit_is_refused(tmp_path, depth):
    open_dir = tmp_path / "vol"
    cache_dir = open_dir / "/".join(["sub"] * depth) if depth else open_dir
    cache_dir.mkdir(parents=True)
    os.chmod(open_dir, 0o777)
    with pytest.raises(MaterializeError) as err:
        fetch(cache_dir)
    line = err.value.one_line()
    assert err.value.exit_code == EXIT_MATERIALIZE and str(open_dir) in line and "chmod +t" in line, line
    assert not (cache_dir / "sources").exists()


def test_the_same_folder_with_the_sticky_bit_is_accepted(tmp_path):
    open_dir = tmp_path / "vol"
    open_dir.mkdir()
    os.chmod(open_dir, 0o1777)
    assert (fetch(open_dir) / "config.json").read_bytes() == b"{}"


@pytest.mark.parametrize(
    "mounted, refused",
    [
        ((), True),  # the cache folder under an open emptyDir: another user could rename it away
        (("cache",), False),  # a volume mounted there: the kernel refuses to rename or remove a mount point
        (("cache/compile",), True),  # a mount deeper down does not protect the folder above it
    ],
)
def test_a_mount_point_under_an_open_folder_cannot_be_swapped(tmp_path, mounted, refused):
    from nim_specdec.files.trust import open_to_others_reason

    home = tmp_path / "home"
    (home / "cache").mkdir(parents=True)
    home.chmod(0o777)
    reason = open_to_others_reason(home / "cache", mounts=frozenset(str(home / m) for m in mounted))
    assert (reason is not None) == refused, reason
    if refused:
        assert str(home) in reason and "no sticky bit" in reason


def test_this_process_mount_points_are_read_from_the_kernel():
    from nim_specdec.files.trust import mount_points

    points = mount_points()
    assert "/" in points and "/proc" in points


def test_compile_cache_under_a_folder_others_can_write_is_not_trusted(tmp_path):
    from nim_specdec.launch.compile_cache.claim import untrusted_reason

    (tmp_path / "vol").mkdir()
    os.chmod(tmp_path / "vol", 0o777)
    assert "sticky" in untrusted_reason(tmp_path / "vol" / "cache" / "compile")


@pytest.fixture
def umask_000():
    old = os.umask(0)
    yield
    os.umask(old)


def test_every_folder_we_create_is_owner_only_under_umask_000(tmp_path, umask_000):
    cache_dir = tmp_path / "a" / "b" / "cache"
    fetch(cache_dir)
    made = [tmp_path / "a", tmp_path / "a" / "b", cache_dir]
    made += [p for p in cache_dir.rglob("*") if p.is_dir() and not p.is_symlink()]
    modes = {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in made}
    assert set(modes.values()) == {"0o700"}, modes
    ensure_workspace(tmp_path / "w1" / "w2" / "workspace", cache_dir)
    for p in (tmp_path / "w1", tmp_path / "w1" / "w2", tmp_path / "w1" / "w2" / "workspace"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p


def _old_key(base: Path, name: str) -> Path:
    key = base / name
    (key / "inductor").mkdir(parents=True)
    (key / "inductor" / "code.py").write_text("x = 1\n")
    (key / LOCK).write_bytes(b"")
    os.utime(key / LOCK, (1, 1))
    return key


def test_prune_acts_on_the_folder_it_checked_not_on_a_link_swapped_in_after_the_check(tmp_path, monkeypatch):
    """The race needs a second actor: made deterministic by swapping compile/ for a link to a folder outside
    the cache from inside the ownership check itself, i.e. after the check and before the listing."""
    base = tmp_path / "cache" / "compile"
    _old_key(base, "mine")
    outside = tmp_path / "precious"
    victim = _old_key(outside, "victim")
    real = compile_cache_prune.untrusted_reason

    def check_then_swap(path):
        reason = real(path)
        os.rename(base, tmp_path / "cache" / "compile.moved")
        os.symlink(outside, base)
        return reason

    monkeypatch.setattr(compile_cache_prune, "untrusted_reason", check_then_swap)
    with pytest.raises(ConfigError, match="changed after it was checked"):
        compile_cache_prune.prune(base, 0.0, 10**10)
    assert (victim / "inductor" / "code.py").read_text() == "x = 1\n"


def test_prune_never_deletes_through_a_key_swapped_for_a_link(tmp_path, monkeypatch):
    """A key swapped for a link to a folder outside the cache right after prune opened it: the link may be
    renamed aside, it is never entered."""
    base = tmp_path / "compile"
    key = _old_key(base, "k")
    victim = _old_key(tmp_path / "precious", "victim")
    real_open = compile_cache_prune._open_key

    def open_then_swap(dir_fd, name):
        fd = real_open(dir_fd, name)
        os.rename(key, tmp_path / "k.moved")
        os.symlink(victim, key)
        return fd

    monkeypatch.setattr(compile_cache_prune, "_open_key", open_then_swap)
    compile_cache_prune.prune(base, 0.0, 10**10)
    assert (victim / "inductor" / "code.py").read_text() == "x = 1\n"


def test_save_records_writes_users_token_ids_owner_only(tmp_path):
    from nim_specdec_lab.ngram.corpus import RecordedRequest
    from nim_specdec_lab.ngram.http_replay import save_records

    out = tmp_path / "records.jsonl"
    save_records(str(out), [RecordedRequest.of([1, 2], [3])], 128)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "args,where",
    [
        ({"model": "other/model"}, "NIM_MODEL_PATH"),
        ({"model": "{dir}/draft", "max_num_seqs": 4}, "NIM_MODEL_PATH"),
        ({"middleware": "evil.Middleware"}, "--middleware"),
    ],
)
def test_a_key_that_names_the_target_or_a_launcher_argument_is_refused(tmp_path, args, where):
    env = {**EAGLE, "NIM_SPECDEC_ARGS": json.dumps({**json.loads(EAGLE["NIM_SPECDEC_ARGS"]), **args})}
    result = run_case(Case(env=env, files=models()), tmp_path / "c")
    assert result.code == 2 and "NIM_SPECDEC_ARGS" in result.stderr and where in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
