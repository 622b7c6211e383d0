"""OUT is ours by its marker, never followed through a link, and a draft appears there only whole."""

from __future__ import annotations

import os
import os as _os

import pytest

from nim_specdec.errors import ConfigError
from nim_specdec_lab.draft.output_dir import MARKER, claim, clear_staging, publish, refuse_foreign


def test_new_directory_is_made_owner_only_and_marked(tmp_path):
    layout = claim(tmp_path / "a" / "out")
    assert (layout.root / MARKER).is_file() and layout.work.is_dir()
    assert os.stat(layout.root).st_mode & 0o777 == 0o700


def test_an_empty_directory_is_taken_and_ours_is_taken_again(tmp_path):
    (tmp_path / "out").mkdir()
    first = claim(tmp_path / "out")
    (first.work / "train.jsonl").write_text("{}\n")
    assert claim(tmp_path / "out").root == first.root and (first.work / "train.jsonl").is_file()


@pytest.mark.parametrize("kind", ["link", "foreign", "file", "marker-link"])
def test_what_is_not_ours_is_refused_untouched(tmp_path, kind):
    out = tmp_path / "out"
    if kind == "link":
        (tmp_path / "real").mkdir()
        out.symlink_to(tmp_path / "real")
    elif kind == "foreign":
        out.mkdir()
        (out / "model.safetensors").write_text("x")
    elif kind == "file":
        out.write_text("x")
    else:  # a marker planted as a link does not make the folder ours
        out.mkdir()
        (tmp_path / "m").write_text("x")
        (out / MARKER).symlink_to(tmp_path / "m")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ConfigError, match="--out"):
        refuse_foreign(out)
    with pytest.raises(ConfigError, match="--out"):
        claim(out)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_publish_replaces_the_old_draft_whole(tmp_path):
    layout = claim(tmp_path / "out")
    for version in ("one", "two"):
        staging = clear_staging(layout, "draft")
        _os.mkdir(staging)  # the training stage makes it
        (staging / "config.json").write_text(version)
        publish(layout, staging, "draft")
        assert (layout.draft / "config.json").read_text() == version
    assert sorted(p.name for p in layout.work.iterdir()) == []  # no staging or old copy left behind


def test_a_killed_runs_staging_is_never_followed(tmp_path):
    layout = claim(tmp_path / "out")
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "keep").write_text("x")
    layout.staging("draft").symlink_to(tmp_path / "victim")
    staging = clear_staging(layout, "draft")
    assert not _os.path.lexists(staging) and (tmp_path / "victim" / "keep").is_file()
