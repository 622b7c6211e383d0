"""The lab's maps: the docstring of a mapped package's __init__.py (tune/ and each of its sub-packages, simulation/,
bench/, ngram/) names every folder and file directly in that package, and nothing else, and every sub-package of a
mapped package has a map of its own. A module added, removed, moved or renamed without its line in a map fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from package_map import docstring, map_entries

LAB = Path(__file__).resolve().parents[2] / "src" / "nim_specdec_lab"
# The lab packages that carry a map, with every sub-package below them.
MAPPED = ("tune", "simulation", "bench", "ngram")


def _on_disk(folder: Path) -> set[str]:
    """The folders and files directly in a package: a sub-package is one line, its files are in its own map."""
    return {
        f"{path.name}/" if path.is_dir() else path.name
        for path in folder.iterdir()
        if path.name not in ("__pycache__", "__init__.py")
    }


def _mapped_packages() -> list[Path]:
    return [folder for root in MAPPED for folder in sorted(p.parent for p in (LAB / root).rglob("__init__.py"))]


@pytest.mark.parametrize("package", _mapped_packages(), ids=lambda p: str(p.relative_to(LAB)))
def test_the_map_names_every_folder_and_file_of_its_package(package):
    mapped = map_entries(docstring(package / "__init__.py"))
    on_disk = _on_disk(package)
    assert sorted(on_disk - mapped) == [], f"on disk but not in {package.name}/__init__.py's map"
    assert sorted(mapped - on_disk) == [], f"in {package.name}/__init__.py's map but not on disk"


def test_every_mapped_module_says_what_it_decides():
    missing = [
        str(p.relative_to(LAB)) for root in MAPPED for p in sorted((LAB / root).rglob("*.py")) if not docstring(p)
    ]
    assert missing == []


def test_the_maps_cover_sub_packages_and_the_reader_sees_a_missing_file():
    assert {LAB / "tune", LAB / "tune" / "runs", LAB / "simulation"} <= set(_mapped_packages())
    doc = "intro line\n\nsub/            what\n  a.py          what\n  data/         what\ntop.py          what\n"
    assert map_entries(doc) == {"sub/", "sub/a.py", "sub/data/", "top.py"}
    assert map_entries("a.py what\n") == set()  # one space: prose, not a map line
