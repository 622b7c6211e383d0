"""The volume's rule whatever the source of the draft, and NIM_CACHE_TRUST_SHARED: a workspace under a cache
others can write without the sticky bit is refused as the cache is (a local draft too: vLLM is handed its link
by path); where the platform vouches for the volume, the cache, the workspace and the compile cache are used
whoever wrote them, links are still refused, and every start says so once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import EXIT_MATERIALIZE, MaterializeError
from nim_specdec.fetchers.context import shared_trust_warning
from nim_specdec.fetchers.download.materialize import Job, RemoteFile, materialize
from nim_specdec.fetchers.volume import cache
from nim_specdec.launch.compile_cache.claim import untrusted_reason as compile_untrusted
from nim_specdec.launch.workspace import link
from servers.harness import context_for

OTHER_UID = 54321
ROOT = os.geteuid() == 0
REF = parse_source("s3://bucket/draft", "NIM_DRAFT_MODEL_PATH")


class OneFile:
    def __init__(self) -> None:
        self.downloads = 0

    def download(self, job: Job) -> list[RemoteFile]:
        self.downloads += 1
        (job.dest / "config.json").write_bytes(b"{}")
        return [RemoteFile("config.json", 2)]

    def is_transient(self, err: BaseException) -> bool:
        return False


def open_volume(tmp_path: Path) -> Path:
    """Shape (a): a volume root every user can write, without the sticky bit."""
    volume = tmp_path / "volume"
    volume.mkdir()
    os.chmod(volume, 0o777)
    return volume


def local_draft(tmp_path: Path) -> Path:
    draft = tmp_path / "models" / "draft"
    draft.mkdir(parents=True)
    (draft / "config.json").write_text("{}")
    return draft


def test_a_local_draft_is_not_linked_into_a_workspace_on_an_open_volume(tmp_path):
    """The third round's open class: only the workspace itself was checked, not the open volume it lies in."""
    volume = open_volume(tmp_path)
    with pytest.raises(MaterializeError) as err:
        link(local_draft(tmp_path), volume / "workspace" / "draft", volume)
    line = err.value.one_line()
    assert err.value.exit_code == EXIT_MATERIALIZE and len(line.splitlines()) == 1
    assert f"{volume} is writable by every user and has no sticky bit" in line and "NIM_WORKSPACE" in line, line
    assert "NIM_CACHE_TRUST_SHARED=1" in line and "access point" in line
    assert os.listdir(volume) == []


def test_a_workspace_outside_the_cache_keeps_its_own_rule(tmp_path):
    """The manifests' workspace: owner-only in a pod's own emptyDir (root's, 0777), which only the pod mounts."""
    volume = open_volume(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    os.chmod(scratch, 0o777)
    draft = local_draft(tmp_path)
    link(draft, scratch / "workspace" / "draft", volume)
    assert (scratch / "workspace" / "draft").resolve() == draft.resolve()


def test_vouched_the_open_volume_serves_the_workspace_and_the_cache(tmp_path):
    volume = open_volume(tmp_path)
    draft = local_draft(tmp_path)
    link(draft, volume / "workspace" / "draft", volume, vouched=volume)
    assert (volume / "workspace" / "draft").resolve() == draft.resolve()
    backend = OneFile()
    ctx = context_for({}, volume, trust_shared=True)
    files = materialize(REF, ctx, backend)
    assert materialize(REF, ctx, backend) == files and backend.downloads == 1
    with pytest.raises(MaterializeError, match="NIM_CACHE_TRUST_SHARED=1"):
        materialize(REF, context_for({}, volume), backend)  # the same volume, not vouched for: refused


@pytest.mark.skipif(not ROOT, reason="hands the entry to another UID")
def test_vouched_an_entry_another_uid_of_the_workload_wrote_is_served_a_link_never(tmp_path):
    volume = tmp_path / "volume"
    volume.mkdir()
    backend = OneFile()
    files = materialize(REF, context_for({}, volume), backend)
    for path in [files.parent, files, *files.parent.rglob("*")]:
        os.lchown(path, OTHER_UID, OTHER_UID)
    layout = cache.CacheLayout.under(volume)
    name = cache.entry_name(REF)
    assert "uid 54321" in cache.untrusted_reason(layout, name)
    assert cache.complete_files(cache.CacheLayout.under(volume, vouched=True), name) == files
    (files / "planted").symlink_to("/etc/hostname")
    reason = cache.untrusted_reason(cache.CacheLayout.under(volume, vouched=True), name)
    assert reason is not None and "planted is a link that leads out of" in reason
    os.unlink(files / "planted")
    os.rename(files / "config.json", files / "real.json")
    (files / "config.json").symlink_to(files / "real.json")
    marker = files.parent / cache.MARKER
    os.rename(marker, files.parent / "marker.json")
    marker.symlink_to(files.parent / "marker.json")
    assert cache.read_marker(marker, vouched=True) is None  # a link is never followed, vouched or not


def test_vouched_the_compile_cache_on_an_open_volume_is_used(tmp_path):
    volume = open_volume(tmp_path)
    assert "no sticky bit" in compile_untrusted(volume / "compile")
    assert compile_untrusted(volume / "compile", str(volume)) == ""


def test_every_vouched_start_says_so_once_and_why(tmp_path):
    volume = open_volume(tmp_path)
    assert shared_trust_warning(context_for({}, volume)) is None
    warning = shared_trust_warning(context_for({}, volume, trust_shared=True))
    assert warning.startswith("NIM_CACHE_TRUST_SHARED=1: using the cache at") and "\n" not in warning
    assert f"without it the volume is refused: {volume} is writable by every user" in warning
    proven = tmp_path / "proven"
    proven.mkdir(mode=0o700)
    assert "would be trusted without it" in shared_trust_warning(context_for({}, proven, trust_shared=True))
