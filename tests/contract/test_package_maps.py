"""A package's map (the docstring of its __init__.py: plan/, engines/vllm/) names every folder and file under it, and
nothing else: a module added, removed, moved or renamed without its line in the map fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

import nim_specdec.engines.vllm
import nim_specdec.plan
from package_map import docstring, map_entries

MAPPED = {
    "plan": Path(nim_specdec.plan.__file__).resolve().parent,
    "engines/vllm": Path(nim_specdec.engines.vllm.__file__).resolve().parent,
}


def _on_disk(folder: Path, prefix: str = "") -> set[str]:
    found = set()
    for path in sorted(folder.iterdir()):
        if path.name == "__pycache__" or path.name == "__init__.py":
            continue
        if path.is_dir():
            found.add(f"{prefix}{path.name}/")
            if (path / "__init__.py").is_file():  # a package's files are mapped; a data folder stands for its files
                found |= _on_disk(path, f"{prefix}{path.name}/")
        else:
            found.add(prefix + path.name)
    return found


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_the_map_names_every_folder_and_file_under_the_package(name):
    root = MAPPED[name]
    mapped = map_entries(docstring(root / "__init__.py") or "")
    on_disk = _on_disk(root)
    assert sorted(on_disk - mapped) == [], f"on disk but not in {name}/__init__.py's map"
    assert sorted(mapped - on_disk) == [], f"in {name}/__init__.py's map but not on disk"


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_every_module_and_sub_package_says_what_it_decides(name):
    root = MAPPED[name]
    missing = [str(p.relative_to(root)) for p in sorted(root.rglob("*.py")) if not docstring(p)]
    assert missing == []


def test_the_map_reader_sees_nesting_and_a_missing_file():
    doc = "intro line\n\nsub/            what\n  a.py          what\n  data/         what\ntop.py          what\n"
    assert map_entries(doc) == {"sub/", "sub/a.py", "sub/data/", "top.py"}
