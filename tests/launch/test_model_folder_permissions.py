"""A local model folder the launcher's user cannot read, or cannot reach through a folder above it, stops the
plan with one line naming the folder, its owner and mode, and the fix (exit 3), never an internal error.

The image runs as UID 1000 while a model folder copied in by root is often 0700. The check runs in a forked
child that drops to an unprivileged user where the tests run as root (root reads everything), and as the
test's own user elsewhere: the folders' modes deny either.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from core_fixtures import LLAMA, facts
from nim_specdec.errors import LauncherError
from nim_specdec.launch.resolve import plan_for

NOBODY = 65534


def _as_unprivileged(env: dict[str, str]) -> dict:
    """The plan's outcome for `env` in a child process that cannot read what only root may."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            plan_for(env, [], facts())
            out = {"ok": True}
        except LauncherError as err:
            out = {"ok": False, "exit": err.exit_code, "line": err.one_line()}
        except BaseException as err:  # noqa: BLE001 - reported to the parent, which fails the test
            out = {"ok": False, "exit": 1, "line": f"{type(err).__name__}: {err}"}
        os.write(write, json.dumps(out).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.fixture
def shared_dir():
    """A folder under /tmp that every user may enter (pytest's own tmp_path is private to its user)."""
    base = Path(tempfile.mkdtemp(prefix="nim-perm-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    for path in base.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    shutil.rmtree(base)


def _model(folder: Path) -> Path:
    folder.mkdir(parents=True, mode=0o755)
    (folder / "config.json").write_text(json.dumps(LLAMA))
    (folder / "config.json").chmod(0o644)
    return folder


def _env(base: Path, model: Path) -> dict[str, str]:
    return {"NIM_MODEL_PATH": str(model), "NIM_CACHE_PATH": str(base / "cache"), "NIM_SPECDEC_ENABLE": "1"}


def test_a_readable_model_plans(shared_dir):
    model = _model(shared_dir / "m")
    assert _as_unprivileged(_env(shared_dir, model)) == {"ok": True}


def test_an_unreadable_model_folder_names_its_owner_mode_and_the_fix(shared_dir):
    model = _model(shared_dir / "m")
    model.chmod(0o700)
    outcome = _as_unprivileged(_env(shared_dir, model))
    assert outcome["exit"] == 3, outcome
    assert outcome["line"].startswith(f"NIM_MODEL_PATH: cannot read {model}: it is owned by uid {os.geteuid()}")
    assert "mode 0700" in outcome["line"] and "chmod -R a+rX" in outcome["line"]


def test_a_folder_above_it_that_cannot_be_entered_is_one_line(shared_dir):
    model = _model(shared_dir / "p" / "q" / "m")
    (shared_dir / "p").chmod(0o700)
    outcome = _as_unprivileged(_env(shared_dir, model))
    assert outcome["exit"] == 3, outcome
    assert f"NIM_MODEL_PATH: directory {model} cannot be reached (Permission denied)" in outcome["line"]


def test_an_unreadable_config_json_is_one_line(shared_dir):
    model = _model(shared_dir / "m")
    (model / "config.json").chmod(0o000)
    outcome = _as_unprivileged(_env(shared_dir, model))
    assert outcome["exit"] == 3, outcome
    assert outcome["line"] == f"NIM_MODEL_PATH: {model}/config.json cannot be read (Permission denied); " + (
        "check the file and its permissions"
    )
