"""Capture under hostile bodies and paths: the writer outlives any body, and never writes through a link."""

from __future__ import annotations

import json
import os
import stat

import pytest
from capture_harness import read_lines
from prometheus_client import CollectorRegistry

from nim_specdec.capture.counters import capture_counters
from nim_specdec.capture.file import open_capture_file
from nim_specdec.capture.formats import FORMATS
from nim_specdec.capture.launcher import check_writable
from nim_specdec.capture.writer import CaptureWriter
from nim_specdec.config.capture_config import CaptureConfig, parse_capture
from nim_specdec.errors import ConfigError

HOSTILE = {
    "too_deep": b'{"a":' + b"[" * 200000 + b"]" * 200000 + b"}",
    "not_json": b'{"a": NaN}',
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_writer_survives_every_body_and_counts_each_drop(tmp_path, fmt):
    path = tmp_path / "c.jsonl"
    counters = capture_counters(CollectorRegistry())
    writer = CaptureWriter(open_capture_file(str(path)), FORMATS[fmt], counters, queue_size=8)
    for reason, body in HOSTILE.items():
        assert writer.submit(0.0, body)
        assert writer.submit(1.0, b'{"after": "%s"}' % reason.encode())
    writer.close(timeout=60)
    lines = read_lines(path)
    payloads = [line["payload"] if fmt == "mooncake_payload" else line for line in lines]
    assert payloads == [{"after": "too_deep"}, {"after": "not_json"}]
    assert counters.stats.dropped["too_deep"] == 1 and counters.stats.dropped["not_json"] == 1
    assert counters.stats.written == 2


def test_an_encoder_failure_of_any_kind_is_counted_and_the_writer_goes_on(tmp_path):
    def flaky(ts: float, body: bytes) -> bytes:
        if body == b"boom":
            raise MemoryError("simulated")
        return body + b"\n"

    path = tmp_path / "c.jsonl"
    counters = capture_counters(CollectorRegistry())
    writer = CaptureWriter(open_capture_file(str(path)), flaky, counters, queue_size=4)
    writer.submit(0.0, b"boom")
    writer.close(timeout=30)  # the first batch went through _write_batch before close
    assert counters.stats.dropped["encode_error"] == 1
    writer2 = CaptureWriter(open_capture_file(str(path)), flaky, counters, queue_size=4)
    for body in (b"boom", b'{"x":1}'):
        writer2.submit(0.0, body)
    writer2.close(timeout=30)
    assert read_lines(path) == [{"x": 1}]


def test_a_stopped_writer_counts_drops_and_closes_without_raising(tmp_path):
    def dies(ts: float, body: bytes) -> bytes:
        raise SystemExit  # not an Exception: ends the thread, as only a bug in the interpreter could

    counters = capture_counters(CollectorRegistry())
    writer = CaptureWriter(open_capture_file(str(tmp_path / "c.jsonl")), dies, counters, queue_size=1)
    writer.submit(0.0, b'{"a": 1}')
    writer._thread.join(10)
    assert not writer.submit(0.0, b'{"a": 1}')
    assert counters.stats.dropped["writer_stopped"] == 1
    writer.close(timeout=0.5)


def test_close_with_a_stuck_writer_and_a_full_queue_does_not_raise(tmp_path):
    import threading

    release = threading.Event()

    def stuck(ts: float, body: bytes) -> bytes:
        release.wait(30)
        return body + b"\n"

    writer = CaptureWriter(
        open_capture_file(str(tmp_path / "c.jsonl")), stuck, capture_counters(CollectorRegistry()), queue_size=1
    )
    writer.submit(0.0, b"{}")
    while writer._queue.qsize():  # the thread holds the first record
        pass
    assert writer.submit(0.0, b"{}")  # fills the queue
    writer.close(timeout=0.5)
    release.set()


def test_link_at_the_capture_path_is_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    os.chmod(victim, 0o644)
    path = tmp_path / "c.jsonl"
    path.symlink_to(victim)
    with pytest.raises(OSError):
        open_capture_file(str(path))
    assert check_writable(CaptureConfig(path=str(path))) is not None
    assert victim.read_text() == "keep\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_missing_folders_are_created_owner_only(tmp_path):
    path = tmp_path / "a" / "b" / "c.jsonl"
    os.close(open_capture_file(str(path)))
    for folder in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


@pytest.mark.parametrize("path", ["/x/\x00y.jsonl", "/x/\ud800.jsonl", "/" + "a" * 5000])
def test_unusable_capture_path_is_a_configuration_error(path):
    with pytest.raises(ConfigError, match="NIM_CAPTURE_ARGS.path"):
        parse_capture({"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": json.dumps({"path": path})})


def test_the_launcher_knows_every_format_the_server_writes():
    from nim_specdec.config.capture_config import FORMATS as NAMES

    assert tuple(sorted(NAMES)) == tuple(sorted(FORMATS))


@pytest.mark.parametrize(
    "content,mode",
    [
        ('{"payload":{"a":1},"timestamp":0}\n', 0o644),  # a capture made readable by others: not as created
        ("export SECRET=1\n", 0o600),  # a file of the user's own, owner-only
        ('{\n  "auths": {}\n}\n', 0o600),  # a pretty-printed JSON file (a registry's credentials)
        ("-----BEGIN OPENSSH PRIVATE KEY-----\n", 0o600),
    ],
)
def test_an_existing_file_the_launcher_did_not_create_is_refused_and_left_as_it_is(tmp_path, content, mode):
    path = tmp_path / "capture.jsonl"
    path.write_text(content)
    os.chmod(path, mode)
    before = path.stat()
    with pytest.raises(OSError, match="not a capture file nim-specdec created"):
        open_capture_file(str(path))
    after = path.stat()
    assert path.read_text() == content and stat.S_IMODE(after.st_mode) == mode
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_capture_path_of_a_new_file_is_created_owner_only_and_then_reused(tmp_path):
    path = tmp_path / "sub" / "capture.jsonl"
    os.close(open_capture_file(str(path)))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.close(open_capture_file(str(path)))  # empty and ours: the server opens it again after the pre-flight
    path.write_text('{"model":"m","messages":[]}\n')
    os.close(open_capture_file(str(path)))
