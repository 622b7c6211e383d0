"""The capture queue is bounded in bytes as well as in records: large bodies that parse slowly are dropped
and counted once the bytes held reach the bound, instead of piling up inside the API server."""

from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry

from nim_specdec.capture.counters import capture_counters
from nim_specdec.capture.file import open_capture_file
from nim_specdec.capture.writer import DEFAULT_QUEUE_BYTES, CaptureWriter


def test_bodies_past_the_byte_bound_are_dropped_and_counted_while_the_writer_is_slow(tmp_path):
    release = threading.Event()

    def slow(ts: float, body: bytes) -> bytes:
        release.wait(30)
        return b'{"n": %d}\n' % len(body)

    counters = capture_counters(CollectorRegistry())
    body = b" " * (256 * 1024)
    writer = CaptureWriter(open_capture_file(str(tmp_path / "c.jsonl")), slow, counters, queue_bytes=1024 * 1024)
    accepted = [writer.submit(0.0, body) for _ in range(12)]
    assert accepted == [True] * 4 + [False] * 8  # 4 x 256 KiB fill the bound; records alone allow 4096
    assert counters.stats.dropped["queue_full"] == 8
    release.set()
    writer.close(timeout=10)
    assert (tmp_path / "c.jsonl").read_bytes().count(b"\n") == 4
    assert counters.stats.written == 4


def test_the_bytes_are_given_back_once_written(tmp_path):
    counters = capture_counters(CollectorRegistry())
    writer = CaptureWriter(
        open_capture_file(str(tmp_path / "c.jsonl")), lambda ts, b: b + b"\n", counters, queue_bytes=64
    )
    body = b'{"a": "' + b"x" * 40 + b'"}'  # 49 bytes: two never fit at once
    for _ in range(20):
        assert writer.submit(0.0, body)
        deadline = time.monotonic() + 10
        while writer._held_bytes and time.monotonic() < deadline:
            time.sleep(0.001)
    writer.close(timeout=10)
    assert counters.stats.dropped["queue_full"] == 0 and counters.stats.written == 20
    assert DEFAULT_QUEUE_BYTES <= 256 * 1024 * 1024
