"""The workspace follows the cache's trust rule: created owner-only, refused when another user owns it or
can write it, and its links read with readlink rather than resolved."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.launch.workspace import ensure_workspace, foreign_link_reason, link

OTHER_UID = 54321
ROOT = os.geteuid() == 0


def entry(cache: Path) -> Path:
    files = cache / "sources" / "entries" / "s3--b--d" / "files"
    files.mkdir(parents=True)
    return files


def test_new_workspace_is_created_owner_only_with_its_missing_parents(tmp_path):
    workspace = tmp_path / "vol" / "nested" / "ws"
    ensure_workspace(workspace, tmp_path / "cache")
    assert stat.S_IMODE(workspace.lstat().st_mode) == 0o700
    assert (tmp_path / "vol" / "nested").is_dir()


def test_own_workspace_opened_to_others_is_made_owner_only_again(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chmod(workspace, 0o750)
    ensure_workspace(workspace, tmp_path / "cache")
    assert stat.S_IMODE(workspace.lstat().st_mode) == 0o700


def _world_writable(path: Path) -> None:
    os.chmod(path, 0o777)


def _other_owner(path: Path) -> None:
    os.chown(path, OTHER_UID, OTHER_UID)


CASES = [("writable by every user", _world_writable, "is writable by every user")]
if ROOT:
    CASES.append(("owned by another uid", _other_owner, f"uid {OTHER_UID}"))


@pytest.mark.parametrize("label,spoil,fragment", CASES, ids=[c[0] for c in CASES])
def test_workspace_another_user_could_write_is_refused_naming_folder_owner_and_fix(tmp_path, label, spoil, fragment):
    cache = tmp_path / "cache"
    files = entry(cache)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    spoil(workspace)
    with pytest.raises(MaterializeError) as err:
        link(files, workspace / "draft", cache)
    line = err.value.one_line()
    assert err.value.exit_code == EXIT_MATERIALIZE and len(line.splitlines()) == 1
    assert str(workspace) in line and fragment in line and "owner uid" in line and "remove" in line
    assert not (workspace / "draft").exists() and list(workspace.iterdir()) == []


def test_workspace_that_is_a_link_is_refused_and_its_target_untouched(tmp_path):
    cache = tmp_path / "cache"
    files = entry(cache)
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    (tmp_path / "ws").symlink_to(theirs)
    with pytest.raises(MaterializeError, match="is a link"):
        link(files, tmp_path / "ws" / "draft", cache)
    assert list(theirs.iterdir()) == [] and stat.S_IMODE(theirs.stat().st_mode) == 0o755


def test_workspace_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "ws").write_text("x")
    with pytest.raises(MaterializeError, match="is not a directory"):
        ensure_workspace(tmp_path / "ws", tmp_path / "cache")


def test_link_is_read_not_resolved_a_chain_through_a_foreign_hop_is_not_ours(tmp_path):
    cache = tmp_path / "cache"
    files = entry(cache)
    workspace = tmp_path / "ws"
    workspace.mkdir(mode=0o700)
    hop = tmp_path / "hop"
    hop.symlink_to(files)  # resolves into the cache, but the link itself names a folder outside it
    (workspace / "draft").symlink_to(hop)
    reason = foreign_link_reason(workspace / "draft", os.path.realpath(files), cache)
    assert reason is not None and str(hop) in reason
    with pytest.raises(MaterializeError, match="not in this launcher's cache"):
        link(files, workspace / "draft", cache)
    assert os.readlink(workspace / "draft") == str(hop)


def test_link_of_ours_is_replaced_and_points_at_the_entry(tmp_path):
    cache = tmp_path / "cache"
    files = entry(cache)
    workspace = tmp_path / "ws"
    link(files, workspace / "draft", cache)
    link(files, workspace / "draft", cache)
    assert os.readlink(workspace / "draft") == os.path.realpath(files)
    assert sorted(p.name for p in workspace.iterdir()) == [".draft.nim-link", "draft"]  # no temporary left


def test_a_local_draft_changed_between_two_starts_is_linked_again(tmp_path):
    """The link the launcher made on an earlier start names a local draft outside the cache: its record beside
    the link says this launcher made it, so the next start with another draft replaces it (vLLM takes either)."""
    cache = tmp_path / "cache"
    first, second = tmp_path / "draft-a", tmp_path / "draft-b"
    first.mkdir(), second.mkdir()
    workspace = tmp_path / "ws"
    link(first, workspace / "my_draft", cache)
    assert foreign_link_reason(workspace / "my_draft", os.path.realpath(second), cache) is None
    link(second, workspace / "my_draft", cache)
    assert os.readlink(workspace / "my_draft") == os.path.realpath(second)
    assert stat.S_IMODE((workspace / ".my_draft.nim-link").lstat().st_mode) == 0o600


def test_a_hand_made_link_outside_the_cache_has_no_record_and_is_left_alone(tmp_path):
    cache = tmp_path / "cache"
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    theirs.mkdir(), ours.mkdir()
    workspace = tmp_path / "ws"
    link(ours, workspace / "other_name", cache)  # a record of ours exists, for another name
    (workspace / "my_draft").symlink_to(theirs)
    with pytest.raises(MaterializeError, match="not in this launcher's cache nor one it made"):
        link(ours, workspace / "my_draft", cache)
    assert os.readlink(workspace / "my_draft") == str(theirs)


@pytest.mark.parametrize("planted", ["link", "open to others"])
def test_a_record_that_is_a_link_or_writable_by_others_vouches_for_nothing(tmp_path, planted):
    cache = tmp_path / "cache"
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    theirs.mkdir(), ours.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir(mode=0o700)
    (workspace / "my_draft").symlink_to(theirs)
    record = workspace / ".my_draft.nim-link"
    if planted == "link":
        (tmp_path / "forged").write_text(str(theirs))
        record.symlink_to(tmp_path / "forged")
    else:
        record.write_text(str(theirs))
        os.chmod(record, 0o666)
    with pytest.raises(MaterializeError, match="nor one it made"):
        link(ours, workspace / "my_draft", cache)
