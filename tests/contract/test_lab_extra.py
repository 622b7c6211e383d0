"""The lab's commands exist only with the `lab` extra; without it they name the extra in one line (exit 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# numpy stands for the extra: a None entry in sys.modules makes find_spec and import fail as if it were absent.
_WITHOUT_LAB = (
    "import sys; sys.modules['numpy'] = None; from nim_specdec.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def _cli(*args: str, without_lab: bool) -> subprocess.CompletedProcess:
    code = (
        _WITHOUT_LAB
        if without_lab
        else "import sys; from nim_specdec.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("command", ["tune", "bench", "simulate", "tune-ngram", "demo-model"])
def test_a_lab_command_without_the_lab_names_the_extra(command):
    done = _cli(command, "--help", without_lab=True)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert command in lines[0] and "nim-specdec[lab]" in lines[0]
    assert "Traceback" not in done.stderr


def test_without_the_lab_its_commands_are_not_listed_and_the_launcher_still_works():
    done = _cli("--help", without_lab=True)
    assert done.returncode == 0
    assert " tune " not in done.stdout and "simulate" not in done.stdout
    assert "serve" in done.stdout and "plan" in done.stdout


def test_with_the_lab_its_commands_are_registered():
    done = _cli("--help", without_lab=False)
    assert done.returncode == 0
    for command in ("tune", "bench", "simulate", "tune-ngram", "demo-model"):
        assert command in done.stdout
    assert _cli("tune", "--help", without_lab=False).returncode == 0
