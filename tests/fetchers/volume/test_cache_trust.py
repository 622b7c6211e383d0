"""The cache-volume trust rule: a volume others can write never makes the launcher write through their
links, serve their entries, or replace their workspace links.

"Another user" is simulated by handing planted files to another UID (as root), or, where the tests run
unprivileged, by making them writable by every user: both are foreign under the rule.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.fetchers.download.base import FetchContext
from nim_specdec.fetchers.download.materialize import Job, RemoteFile, materialize
from nim_specdec.fetchers.volume import cache
from nim_specdec.files.trust import system_dir_problem
from nim_specdec.launch.workspace import link
from servers.harness import SRC, context_for

OTHER_UID = 54321
ROOT = os.geteuid() == 0
URI = "s3://bucket/draft"


class DirectoryBackend:
    """A store that is a local directory: lists and copies its files, counting downloads."""

    def __init__(self, source: Path) -> None:
        self.source, self.downloads = source, 0

    def download(self, job: Job) -> list[RemoteFile]:
        self.downloads += 1
        files = []
        for path in sorted(p for p in self.source.rglob("*") if p.is_file()):
            rel = path.relative_to(self.source).as_posix()
            (job.dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (job.dest / rel).write_bytes(path.read_bytes())
            files.append(RemoteFile(rel, path.stat().st_size))
        return files

    def is_transient(self, err: BaseException) -> bool:
        return False


def make_foreign(path: Path) -> None:
    """What another user could have written: theirs (as root) or writable by everyone."""
    if ROOT:
        os.lchown(path, OTHER_UID, OTHER_UID)
    else:
        os.chmod(path, stat.S_IMODE(path.stat().st_mode) | 0o002)


@pytest.fixture
def store(tmp_path: Path) -> DirectoryBackend:
    src = tmp_path / "store"
    (src / "sub").mkdir(parents=True)
    (src / "config.json").write_text('{"num_hidden_layers": 1}')
    (src / "sub" / "w.bin").write_bytes(b"weights" * 100)
    return DirectoryBackend(src)


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    """The guide's host directory: writable by every user so that any container UID can write it, with the
    sticky bit (chmod 1777, as /tmp) so that none can rename another's folders."""
    vol = tmp_path / "nim_cache"
    vol.mkdir()
    os.chmod(vol, 0o1777)
    return vol


def ctx(volume: Path, offline: bool = False, logs: list | None = None) -> FetchContext:
    return context_for({}, volume, offline=offline, log=(logs if logs is not None else []).append)


def get(volume: Path, store: DirectoryBackend, **kw) -> Path:
    return materialize(parse_source(URI, "NIM_DRAFT_MODEL_PATH"), ctx(volume, **kw), store)


def layout(volume: Path) -> tuple[cache.CacheLayout, str]:
    return cache.CacheLayout.under(volume), cache.entry_name(parse_source(URI, "X"))


def test_world_writable_volume_works_and_our_dirs_are_owner_only(volume, store):
    files = get(volume, store)
    assert (files / "sub" / "w.bin").read_bytes() == b"weights" * 100
    lay, _ = layout(volume)
    for d in (lay.root, lay.root / "entries", lay.tmp_dir(), lay.root / "locks"):
        assert stat.S_IMODE(d.lstat().st_mode) == 0o700, d
    assert get(volume, store) == files and store.downloads == 1


@pytest.mark.skipif(not ROOT, reason="needs another UID to own the volume")
def test_volume_owned_by_another_uid_and_open_to_all_works(volume, store):
    os.chown(volume, OTHER_UID, OTHER_UID)
    assert get(volume, store).is_dir()


def test_fsgroup_opened_entry_is_still_served(volume, store):
    """A kubelet applying fsGroup makes files group-writable for a group the launcher is in."""
    files = get(volume, store)
    for p in [files.parent, *files.parent.rglob("*")]:
        os.chmod(p, stat.S_IMODE(p.stat().st_mode) | 0o060)
    assert get(volume, store) == files and store.downloads == 1


def test_lock_link_planted_to_outside_file_is_never_written(volume, store, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.chmod(victim, 0o644)
    lay, name = layout(volume)
    get(volume, store)  # creates the layout
    lay.marker(name).unlink()  # force a new download, which takes the lock
    lock = lay.lock(name)
    lock.unlink()
    lock.symlink_to(victim)
    with pytest.raises(MaterializeError) as err:
        get(volume, store)
    assert err.value.exit_code == EXIT_MATERIALIZE and str(lock) in err.value.one_line()
    assert victim.read_text() == "precious" and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_owner_link_planted_to_outside_file_is_replaced_not_followed(volume, store, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.chmod(victim, 0o644)
    lay, name = layout(volume)
    get(volume, store)
    lay.marker(name).unlink()
    lay.owner(name).unlink(missing_ok=True)
    lay.owner(name).symlink_to(victim)
    get(volume, store)
    assert victim.read_text() == "precious" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert not lay.owner(name).is_symlink() and lay.owner(name).read_text().startswith("pid ")


@pytest.mark.parametrize("part", ["entry", "marker", "file", "dir"])
def test_entry_another_user_could_have_written_is_downloaded_afresh(volume, store, part):
    files = get(volume, store)
    lay, name = layout(volume)
    planted = {
        "entry": lay.entry(name),
        "marker": lay.marker(name),
        "file": files / "sub" / "w.bin",
        "dir": files / "sub",
    }[part]
    make_foreign(planted)
    ref = parse_source(URI, "X")
    from nim_specdec.fetchers.download.materialize import cached

    assert cached(ref, ctx(volume)) is None
    logs: list[str] = []
    again = get(volume, store, logs=logs)
    assert store.downloads == 2 and again == files
    assert cache.untrusted_reason(lay, name) is None
    assert any("another user could have written" in line for line in logs)


def test_foreign_entry_refused_when_downloads_are_disabled(volume, store):
    files = get(volume, store)
    make_foreign(files / "config.json")
    with pytest.raises(MaterializeError) as err:
        get(volume, store, offline=True)
    line = err.value.one_line()
    assert err.value.exit_code == EXIT_MATERIALIZE and "config.json" in line and "downloads are disabled" in line
    assert store.downloads == 1


def test_link_planted_as_entry_is_never_served(volume, store, tmp_path):
    get(volume, store)
    lay, name = layout(volume)
    elsewhere = tmp_path / "elsewhere"
    os.rename(lay.entry(name), elsewhere)  # a complete, valid entry, but reached through a link
    lay.entry(name).symlink_to(elsewhere)
    assert cache.complete_files(lay, name) is None
    assert get(volume, store) == lay.files(name) and not lay.entry(name).is_symlink()


@pytest.mark.skipif(not ROOT, reason="needs another UID to own the directory")
def test_sources_dir_of_another_uid_is_refused_naming_path_and_fix(volume, store):
    lay, _ = layout(volume)
    lay.root.mkdir(mode=0o700)
    os.chown(lay.root, OTHER_UID, OTHER_UID)
    with pytest.raises(MaterializeError) as err:
        get(volume, store)
    line = err.value.one_line()
    assert str(lay.root) in line and f"uid {OTHER_UID}" in line and "remove" in line


def test_sources_link_is_refused(volume, store, tmp_path):
    (tmp_path / "theirs").mkdir()
    cache.CacheLayout.under(volume).root.symlink_to(tmp_path / "theirs")
    with pytest.raises(MaterializeError, match="is a link"):
        get(volume, store)
    assert list((tmp_path / "theirs").iterdir()) == []


@pytest.mark.parametrize(
    "marker",
    [
        '{"complete": true}',
        '{"complete": true, "uri": "s3://b/p", "files": [], "size": NaN, "completed_at": ""}',
        '{"complete": true, "uri": "s3://b/p", "files": [{"path": 1}], "size": 1, "completed_at": ""}',
        "[" * 100000,
        "not json",
    ],
)
def test_malformed_marker_counts_as_no_marker(volume, store, marker):
    files = get(volume, store)
    lay, name = layout(volume)
    lay.marker(name).write_text(marker)
    assert cache.complete_files(lay, name) is None
    assert cache.list_entries(lay)[0].completed_at == ""
    assert get(volume, store) == files and store.downloads == 2


@pytest.mark.parametrize("path", ["/", "/etc", "/usr", "/proc/self", "/var/../etc", "/tmp"])
def test_system_directories_are_refused(path):
    assert system_dir_problem(path)


def test_ordinary_directories_are_accepted(tmp_path):
    for path in ("/opt/nim/.cache", "/var/cache/nim", "/tmp/nim_cache", str(tmp_path)):
        assert system_dir_problem(path) is None, path


@pytest.mark.parametrize("variable", ["NIM_CACHE_PATH", "NIM_WORKSPACE"])
def test_plan_refuses_a_system_directory_in_one_line(variable, models):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(SRC),
        "NIM_MODEL_PATH": str(models["target"]),
        variable: "/etc",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == EXIT_MATERIALIZE
    assert len(proc.stderr.strip().splitlines()) == 1 and "/etc" in proc.stderr and variable in proc.stderr


def test_workspace_link_of_ours_into_the_cache_is_replaced(volume, store, tmp_path):
    files = get(volume, store)
    workspace = tmp_path / "ws"
    link(files, workspace / "draft", volume)
    link(files, workspace / "draft", volume)  # a restart: same link again
    assert os.path.realpath(workspace / "draft") == os.path.realpath(files)


def test_workspace_link_pointing_outside_the_cache_is_left_alone(volume, store, tmp_path):
    files = get(volume, store)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "theirs").mkdir()
    (workspace / "draft").symlink_to(tmp_path / "theirs")
    with pytest.raises(MaterializeError, match="not in this launcher's cache") as err:
        link(files, workspace / "draft", volume)
    assert err.value.exit_code == EXIT_MATERIALIZE
    assert os.readlink(workspace / "draft") == str(tmp_path / "theirs")


@pytest.mark.skipif(not ROOT, reason="needs another UID to own the link")
def test_workspace_link_made_by_another_uid_is_left_alone(volume, store, tmp_path):
    files = get(volume, store)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "draft").symlink_to(files)
    os.lchown(workspace / "draft", OTHER_UID, OTHER_UID)
    with pytest.raises(MaterializeError, match=f"uid {OTHER_UID}"):
        link(files, workspace / "draft", volume)


def test_cache_ls_marks_untrusted_entries_and_escapes_control_characters(volume, store):
    files = get(volume, store)
    lay, name = layout(volume)
    document = json.loads(lay.marker(name).read_text())
    document["uri"] = "s3://b/p\x1b[31m\nFAKE LINE"
    cache.write_marker(lay.marker(name), document)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SRC), "NIM_CACHE_PATH": str(volume)}
    table = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "cache", "ls"], env=env, capture_output=True, text=True, timeout=60
    )
    assert table.returncode == 0 and "\x1b" not in table.stdout and len(table.stdout.splitlines()) == 2
    assert "\\x1b[31m" in table.stdout
    make_foreign(files / "config.json")
    table = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "cache", "ls"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "not trusted" in table.stdout and "config.json" in table.stdout


def test_plan_warns_about_an_entry_it_will_not_use(volume, store, models):
    files = get(volume, store)
    make_foreign(files / "config.json")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(SRC),
        "NIM_CACHE_PATH": str(volume),
        "NIM_MODEL_PATH": str(models["target"]),
        "NIM_SPECDEC_ENABLE": "1",
        "NIM_DRAFT_MODEL_PATH": URI,
        "NIM_SPECDEC_ARGS": json.dumps({"speculative_config": {"method": "eagle3", "num_speculative_tokens": 2}}),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    warnings = json.loads(proc.stdout)["warnings"]
    assert any("another user could have written it" in w and "config.json" in w for w in warnings), warnings
