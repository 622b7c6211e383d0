"""A full disk ends a download at once, said as such, and leaves no partial folder; a prepare stopped by
SIGTERM leaves no temporary folder either."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nim_specdec.config.sources import parse_source
from nim_specdec.errors import MaterializeError
from nim_specdec.fetchers.download.materialize import Job, RemoteFile, materialize
from nim_specdec.fetchers.transfer.error_map import disk_full
from nim_specdec.fetchers.volume import cache
from servers.harness import context_for

URI = "s3://bucket/draft"
SRC = Path(__file__).resolve().parents[3] / "src"


class FillingBackend:
    """Writes part of a file, then fails as the disk (or the SDK wrapping it) would; counts attempts."""

    def __init__(self, error: BaseException) -> None:
        self.error, self.attempts = error, 0

    def download(self, job: Job) -> list[RemoteFile]:
        self.attempts += 1
        (job.dest / "part.bin").write_bytes(b"x" * 100)
        raise self.error

    def is_transient(self, err: BaseException) -> bool:
        return True  # as a backend that retries every OSError would say


def _wrapped() -> BaseException:
    try:
        raise OSError(errno.ENOSPC, "No space left on device")
    except OSError as inner:
        try:
            raise RuntimeError("transfer failed") from inner
        except RuntimeError as outer:
            return outer


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        _wrapped(),
        RuntimeError("s5cmd exit 1: ERROR write /c/x: no space left on device"),
    ],
    ids=["enospc", "edquot", "wrapped", "tool-text"],
)
def test_a_full_disk_is_not_retried_and_is_reported_as_a_full_disk(tmp_path, error):
    backend = FillingBackend(error)
    env = {"NIM_DOWNLOAD_RETRIES": "3"}
    ctx = context_for(env, tmp_path, offline=False, log=lambda _m: None)
    with pytest.raises(MaterializeError) as err:
        materialize(parse_source(URI, "NIM_DRAFT_MODEL_PATH"), ctx, backend)
    assert backend.attempts == 1 and err.value.exit_code == 3
    assert "the cache volume is full" in err.value.one_line() and "free space" in err.value.one_line()
    layout = cache.CacheLayout.under(tmp_path)
    assert list(layout.tmp_dir().iterdir()) == []


def test_other_errors_are_not_taken_for_a_full_disk():
    assert not disk_full(OSError(errno.ECONNRESET, "Connection reset by peer"))
    assert not disk_full(TimeoutError("read timed out"))


SLOW_PREPARE = """
import sys, time
from pathlib import Path
from nim_specdec.fetchers import registry

from nim_specdec.fetchers.download.materialize import CachedFetcher

class Slow(CachedFetcher):
    def backend(self):
        return self
    def download(self, job):
        (job.dest / "config.json").write_text("{}")
        print("downloading", flush=True)
        time.sleep(60)
    def is_transient(self, err):
        return False

registry.get_fetcher = lambda scheme: Slow()
from nim_specdec.cli.main import main
sys.exit(main(["prepare"]))
"""


def leftovers(root: Path) -> list[Path]:
    """Temporary folders of a download: in the cache's tmp/ and in the machine's temp folder (TMPDIR)."""
    tmp_dir = cache.CacheLayout.under(root / "cache").tmp_dir()
    return [*(tmp_dir.iterdir() if tmp_dir.is_dir() else ()), *(root / "tmp").iterdir()]


def test_sigterm_during_prepare_leaves_no_temporary_folder(tmp_path):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(SRC),
        "NIM_CACHE_PATH": str(tmp_path / "cache"),
        "NIM_MODEL_PATH": URI,
        "NIM_DOWNLOAD_RETRIES": "0",
        "TMPDIR": str(tmp_path / "tmp"),
    }
    (tmp_path / "tmp").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_PREPARE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 90
        line = ""
        while time.monotonic() < deadline and "downloading" not in line:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
        assert "downloading" in line, proc.stderr.read()
        assert leftovers(tmp_path)  # the download is under way in a temporary folder
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read()
    assert code == 128 + signal.SIGTERM, stderr
    assert leftovers(tmp_path) == [] and "SIGTERM" in stderr and "Traceback" not in stderr
