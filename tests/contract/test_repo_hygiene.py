"""What the repository itself holds: nothing that only means something on the machine it was committed from."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tracked_entries() -> list[tuple[str, str]]:
    out = subprocess.run(["git", "ls-files", "-s", "-z"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    entries = []
    for record in filter(None, out.split("\0")):
        meta, path = record.split("\t", 1)
        entries.append((meta.split()[0], path))
    return entries


def test_no_tracked_link_points_outside_the_checkout():
    # A link committed by accident (a venv linked into a worktree) names a path on one machine only;
    # in a fresh clone it dangles, and `python -m venv` then fails on it with "File exists".
    leaving = []
    for mode, path in _tracked_entries():
        if mode != "120000":
            continue
        target = os.readlink(ROOT / path)
        resolved = (ROOT / path).parent.joinpath(target).resolve()
        if os.path.isabs(target) or not resolved.is_relative_to(ROOT):
            leaving.append(f"{path} -> {target}")
    assert leaving == []


def test_no_tracked_file_is_a_local_environment():
    local = [p for _, p in _tracked_entries() if p.split("/")[0].startswith((".venv", "build", ".nim-cache"))]
    assert local == []
