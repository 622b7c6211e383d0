"""The writer thread and the file: permissions, several processes on one file, the start-up check."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat

from capture_harness import read_lines
from prometheus_client import CollectorRegistry

from nim_specdec.capture.counters import capture_counters
from nim_specdec.capture.file import open_capture_file
from nim_specdec.capture.formats import FORMATS
from nim_specdec.capture.launcher import check_writable
from nim_specdec.capture.writer import CaptureWriter
from nim_specdec.config.capture_config import CaptureConfig


def write_records(path: str, worker: int, count: int, size: int) -> None:
    writer = CaptureWriter(
        open_capture_file(path), FORMATS["mooncake_payload"], capture_counters(CollectorRegistry()), queue_size=count
    )
    filler = chr(ord("a") + worker) * size  # lines far above PIPE_BUF, so only the lock keeps them whole
    for i in range(count):
        assert writer.submit(float(i), json.dumps({"worker": worker, "i": i, "text": filler}).encode())
    writer.close()


def test_processes_appending_to_one_file_never_interleave(tmp_path):
    path = str(tmp_path / "shared.jsonl")
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=write_records, args=(path, w, 300, 20000 + 7 * w)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    lines = read_lines(tmp_path / "shared.jsonl")
    assert len(lines) == 1200
    for w in range(4):
        mine = [line["payload"] for line in lines if line["payload"]["worker"] == w]
        assert [p["i"] for p in mine] == list(range(300))  # each process's records stay in order
        assert all(p["text"] == chr(ord("a") + w) * (20000 + 7 * w) for p in mine)


def test_an_existing_capture_of_ours_is_appended_and_stays_owner_only(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text('{"payload":{"a":1},"timestamp":0}\n')
    os.chmod(path, 0o600)
    counters = capture_counters(CollectorRegistry())
    writer = CaptureWriter(open_capture_file(str(path)), FORMATS["raw_payload"], counters)
    writer.submit(0.0, b'{"b": 2}')
    writer.close()
    writer.close()  # idempotent (atexit calls it again after a lifespan shutdown)
    assert read_lines(path) == [{"payload": {"a": 1}, "timestamp": 0}, {"b": 2}]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert counters.stats.written == 1 and counters.stats.bytes == len(b'{"b": 2}\n')


def test_write_error_counts_and_leaves_no_partial_line(tmp_path):
    path = tmp_path / "ro.jsonl"
    counters = capture_counters(CollectorRegistry())
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o600)  # every write fails with EBADF
    writer = CaptureWriter(fd, FORMATS["raw_payload"], counters)
    writer.submit(0.0, b'{"a": 1}')
    writer.close()
    assert path.read_bytes() == b""
    assert counters.stats.dropped["write_error"] == 1 and counters.stats.written == 0


def test_check_writable(tmp_path):
    assert check_writable(None) is None
    ok = CaptureConfig(str(tmp_path / "new" / "dir" / "c.jsonl"))
    assert check_writable(ok) is None
    assert stat.S_IMODE(os.stat(ok.path).st_mode) == 0o600
    blocker = tmp_path / "file"
    blocker.write_text("")
    warning = check_writable(CaptureConfig(str(blocker / "c.jsonl")))
    assert warning is not None and "capture stays off" in warning and "\n" not in warning
    assert str(blocker / "c.jsonl") in warning
