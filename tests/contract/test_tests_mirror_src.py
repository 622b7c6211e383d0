"""The tests mirror the sources: a folder of tests names the package it tests, so a test is found where its
module is. tests/<package>/ (sub-packages as sub-folders) tests src/nim_specdec/<package>/, tests/lab/<package>/
tests src/nim_specdec_lab/<package>/, and a test file at the top of either names the top-level module it tests.
The suites that cut across packages sit in the folders named in CROSS_CUTTING; a folder that holds no Python
(recorded data) is no test folder.

pytest imports each test module by its file name (the default import mode), so no two may share one.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"
LAUNCHER = SRC / "nim_specdec"
LAB = SRC / "nim_specdec_lab"
LAB_TESTS = TESTS / "lab"

# Top-level folders of tests/ outside the mirror, each with what it holds.
CROSS_CUTTING = {
    "contract": "the import contract, repository and CLI hygiene, docs, start-up cost, the guide's plans, fuzzing",
    "hostile": "hostile input across stages: links, numbers, secrets, trust, the lab's files",
    "deploy": "the image, the Kubernetes manifests and the monitoring rules",
    "e2e": "a real vLLM server started by `nim-specdec serve` (marked e2e)",
    "multinode": "a LeaderWorkerSet group on two network namespaces (marked multinode)",
    "servers": "the loopback stores the fetcher tests download from (helpers, no tests)",
    "data": "recorded model configs and the guide's plans",
    "lab": "the lab's mirror, checked against src/nim_specdec_lab",
}


def _python_folders(root: Path) -> list[Path]:
    """Folders under root that hold Python files of their own (data folders hold none)."""
    return sorted(
        folder
        for folder in root.rglob("*")
        if folder.is_dir() and "__pycache__" not in folder.parts and any(folder.glob("*.py"))
    )


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file()


def _launcher_folders() -> list[Path]:
    return [folder for folder in _python_folders(TESTS) if folder.relative_to(TESTS).parts[0] not in CROSS_CUTTING]


def test_every_launcher_test_folder_names_a_launcher_package():
    stray = [
        str(folder.relative_to(TESTS))
        for folder in _launcher_folders()
        if not _is_package(LAUNCHER / folder.relative_to(TESTS))
    ]
    assert stray == [], f"no src/nim_specdec package for tests/{stray}; move them, or name the folder in CROSS_CUTTING"


def test_every_lab_test_folder_names_a_lab_package():
    stray = [
        str(folder.relative_to(LAB_TESTS))
        for folder in _python_folders(LAB_TESTS)
        if not _is_package(LAB / folder.relative_to(LAB_TESTS))
    ]
    assert stray == [], f"no src/nim_specdec_lab package for tests/lab/{stray}"


def test_a_test_file_at_the_top_names_a_top_level_module():
    stray = [
        str(path.relative_to(TESTS))
        for tests, src in ((TESTS, LAUNCHER), (LAB_TESTS, LAB))
        for path in sorted(tests.glob("test_*.py"))
        if not (src / f"{path.name.removeprefix('test_')}").is_file()
    ]
    assert stray == [], f"{stray} test no top-level module of their package; move them into a package's folder"


def test_the_cross_cutting_folders_exist():
    assert [name for name in CROSS_CUTTING if not (TESTS / name).is_dir()] == []


def test_no_two_test_modules_share_a_file_name():
    names = Counter(
        path.name
        for path in TESTS.rglob("*.py")
        if "__pycache__" not in path.parts and path.name not in ("__init__.py", "conftest.py")
    )
    assert [name for name, count in names.items() if count > 1] == []


def test_the_mirror_is_not_empty():
    # A path computed wrong would find no folder at all and pass the checks above vacuously.
    assert {"plan", "fetchers", "launch"} <= {folder.relative_to(TESTS).parts[0] for folder in _launcher_folders()}
    assert {"tune", "bench"} <= {folder.relative_to(LAB_TESTS).parts[0] for folder in _python_folders(LAB_TESTS)}
