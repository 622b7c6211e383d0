"""A cache folder the launcher cannot write stops `serve` with exit 3 and one line that names the folder,
its owner and the fix, before anything is downloaded or linked.

The real case is a host folder made by root (0755) mounted into the image, which runs as UID 1000:
where the tests run as root, `serve` runs as UID 1000 on a root-owned folder; unprivileged, the folder
is the tests' own with its write bit removed (the owner branch of the message).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from nim_specdec.errors import EXIT_MATERIALIZE
from nim_specdec.files.writable import nearest_existing, unwritable_folder
from servers.harness import SRC

ROOT = os.geteuid() == 0
EAGLE3 = '{"method": "eagle3", "model": "eagle3_draft", "num_speculative_tokens": 3}'


@pytest.mark.parametrize(
    "owner, mode, uid, problem, fix",
    [
        (
            0,
            0o40755,
            1000,
            "owned by uid 0 with mode 0755, and the launcher runs as uid 1000",
            "sudo chown -R 1000:0 DIR), or mount a folder that uid 1000 owns",
        ),
        (
            1001,
            0o40750,
            1000,
            "owned by uid 1001 with mode 0750",
            "or run as its owner (docker run --user 1001:0; in Kubernetes runAsUser: 1001)",
        ),
        (1000, 0o40555, 1000, "owned by uid 1000 with mode 0555", "give its owner write access (chmod u+rwx"),
    ],
)
def test_message_names_owner_mode_and_fix(owner: int, mode: int, uid: int, problem: str, fix: str) -> None:
    said, told = unwritable_folder("/opt/nim/.cache", owner, mode, uid)
    assert said.startswith("cannot write /opt/nim/.cache: ") and problem in said
    assert fix in told
    assert "--user 0:" not in told, "never advise running the server as root"


def test_nearest_existing_is_the_folder_mkdir_would_write(tmp_path: Path) -> None:
    assert nearest_existing(tmp_path / "a" / "b" / "c") == tmp_path
    assert nearest_existing(tmp_path) == tmp_path


def _serve_as_other_user(cache: Path, models: Path) -> subprocess.CompletedProcess[str]:
    for name, arch in (("target", "LlamaForCausalLM"), ("draft", "LlamaForCausalLMEagle3")):
        (models / name).mkdir(parents=True)
        (models / name / "config.json").write_text(json.dumps({"architectures": [arch], "model_type": "llama"}))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cache),
        "PYTHONPATH": str(SRC),
        "NIM_CACHE_PATH": str(cache),
        "NIM_MODEL_PATH": str(models / "target"),
        "NIM_DRAFT_MODEL_PATH": str(models / "draft"),
    }
    # setpriv (util-linux) as the image's USER 1000 with group 0 would be.
    as_uid_1000 = ["setpriv", "--reuid", "1000", "--regid", "0", "--clear-groups"] if ROOT else []
    return subprocess.run(
        [*as_uid_1000, sys.executable, "-m", "nim_specdec", "serve", "--speculative-config", EAGLE3],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_serve_on_an_unwritable_cache_is_one_line_exit_3() -> None:
    # pytest's own folders are root-only: UID 1000 needs a path it can traverse to the models.
    with tempfile.TemporaryDirectory(prefix="nim-unwritable-") as scratch:
        base = Path(scratch)
        base.chmod(0o755)
        cache, models = base / "cache", base / "models"
        cache.mkdir(mode=0o755)
        if ROOT:
            expected = "owned by uid 0 with mode 0755, and the launcher runs as uid 1000"
        else:
            cache.chmod(0o555)
            expected = f"owned by uid {os.geteuid()} with mode 0555"
        try:
            done = _serve_as_other_user(cache, models)
        finally:
            cache.chmod(0o755)
        errors = [line for line in done.stderr.splitlines() if "error" in line]
        assert done.returncode == EXIT_MATERIALIZE, done.stderr
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"cannot write {cache}: " in errors[0] and expected in errors[0]
        assert not list(cache.iterdir()), "nothing half-written"
