"""CaptureMiddleware against a small ASGI application, with a real writer thread and file."""

from __future__ import annotations

import asyncio
import json
import stat
import threading
import time

import pytest
from capture_harness import Lifespan, Seen, call, chat_body, echo_app, lifespan, read_lines, split
from prometheus_client import CollectorRegistry

from nim_specdec.capture.counters import capture_counters
from nim_specdec.capture.file import open_capture_file
from nim_specdec.capture.formats import FORMATS
from nim_specdec.capture.middleware import CaptureMiddleware
from nim_specdec.capture.writer import CaptureWriter
from nim_specdec.config.capture_config import CaptureConfig


def make(tmp_path, fmt="mooncake_payload", pattern=r"^/v1/chat/completions$", queue_size=4096, encoder=None):
    cfg = CaptureConfig(str(tmp_path / "cap" / "payloads.jsonl"), fmt, pattern)
    registry = CollectorRegistry()
    writer = CaptureWriter(
        open_capture_file(cfg.path), encoder or FORMATS[fmt], capture_counters(registry), queue_size=queue_size
    )
    seen = Seen()
    return (
        CaptureMiddleware(echo_app(seen), config=cfg, writer=writer),
        seen,
        registry,
        tmp_path / "cap" / "payloads.jsonl",
    )


def sample(registry, name, **labels):
    value = registry.get_sample_value(name, labels or None)
    return 0.0 if value is None else value


def test_matching_requests_recorded_unchanged(tmp_path):
    mw, seen, registry, path = make(tmp_path)
    body = json.dumps(chat_body(1, stream=True), indent=1).encode()
    status, response = asyncio.run(call(mw, "/v1/chat/completions", split(body, 7)))
    mw.writer.close()
    assert (status, response) == (200, body)  # the streamed response passes through whole
    assert seen.bodies == [body]  # the application received exactly what the client sent
    [line] = read_lines(path)
    assert line["payload"] == chat_body(1, stream=True)
    assert line["timestamp"] == 0  # first captured request of the process
    assert sample(registry, "nim_capture_records_written_total") == 1
    assert sample(registry, "nim_capture_bytes_written_total") == path.stat().st_size
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_non_matching_requests_not_recorded(tmp_path):
    mw, seen, registry, path = make(tmp_path)
    body = json.dumps(chat_body(2)).encode()

    async def scenario():
        await call(mw, "/v1/completions", [body])
        await call(mw, "/v1/chat/completions/extra", [body])
        await call(mw, "/v1/chat/completions", [body], method="PUT")
        await call(mw, "/metrics", [], method="GET")
        await call(mw, "/v1/chat/completions", [body])

    asyncio.run(scenario())
    mw.writer.close()
    assert len(seen.bodies) == 5
    assert [line["payload"] for line in read_lines(path)] == [chat_body(2)]


def test_pattern_is_searched_in_the_path(tmp_path):
    mw, _, _, path = make(tmp_path, fmt="raw_payload", pattern=r"/v1/(chat/)?completions$")
    asyncio.run(call(mw, "/v1/completions", [json.dumps({"prompt": "p"}).encode()]))
    asyncio.run(call(mw, "/v1/chat/completions", [json.dumps(chat_body(3)).encode()]))
    asyncio.run(call(mw, "/v1/embeddings", [json.dumps({"input": "x"}).encode()]))
    mw.writer.close()
    assert read_lines(path) == [{"prompt": "p"}, chat_body(3)]


def test_non_json_bodies_pass_through_and_are_counted(tmp_path):
    mw, seen, registry, path = make(tmp_path)
    status, response = asyncio.run(call(mw, "/v1/chat/completions", [b"not ", b"json"]))
    mw.writer.close()
    assert (status, response, seen.bodies) == (200, b"not json", [b"not json"])
    assert path.read_bytes() == b""
    assert sample(registry, "nim_capture_records_dropped_total", reason="not_json") == 1
    assert sample(registry, "nim_capture_records_written_total") == 0


@pytest.mark.parametrize("fmt", ["mooncake_payload", "raw_payload"])
def test_concurrent_requests_give_one_complete_line_each(tmp_path, fmt):
    mw, seen, registry, path = make(tmp_path, fmt=fmt)
    bodies = [chat_body(i, stream=i % 2 == 0) for i in range(200)]

    async def scenario():
        # Chunks of different requests interleave on the event loop, as on a busy server.
        return await asyncio.gather(
            *(call(mw, "/v1/chat/completions", split(json.dumps(b).encode(), 1 + i % 5)) for i, b in enumerate(bodies))
        )

    results = asyncio.run(scenario())
    mw.writer.close()
    assert all(status == 200 for status, _ in results)
    lines = read_lines(path)
    payloads = [line["payload"] for line in lines] if fmt == "mooncake_payload" else lines
    assert sorted(payloads, key=lambda p: p["max_tokens"]) == bodies
    assert sample(registry, "nim_capture_records_written_total") == 200


def test_full_queue_drops_records_not_requests(tmp_path):
    entered, release = threading.Event(), threading.Event()

    def slow_encoder(ts, body):
        entered.set()
        release.wait(10)
        return FORMATS["raw_payload"](ts, body)

    mw, seen, registry, path = make(tmp_path, fmt="raw_payload", queue_size=2, encoder=slow_encoder)
    bodies = [json.dumps(chat_body(i)).encode() for i in range(6)]
    asyncio.run(call(mw, "/v1/chat/completions", [bodies[0]]))
    assert entered.wait(10)  # the writer holds request 0; the queue (size 2) is empty again

    async def rest():
        return [await call(mw, "/v1/chat/completions", [b]) for b in bodies[1:]]

    results = asyncio.run(rest())
    release.set()
    mw.writer.close()
    assert [r for r in results] == [(200, b) for b in bodies[1:]]  # every request was served
    assert len(seen.bodies) == 6
    assert [line["max_tokens"] for line in read_lines(path)] == [8, 9, 10]
    assert sample(registry, "nim_capture_records_dropped_total", reason="queue_full") == 3
    assert mw.writer.counters.stats.dropped["queue_full"] == 3


def test_lifespan_shutdown_flushes_the_queue(tmp_path):
    def slow_encoder(ts, body):
        time.sleep(0.05)  # 20 records take the writer about a second
        return FORMATS["mooncake_payload"](ts, body)

    mw, seen, registry, path = make(tmp_path, encoder=slow_encoder)

    async def scenario():
        server = Lifespan(mw)
        await server.startup()
        for i in range(20):
            await call(mw, "/v1/chat/completions", [json.dumps(chat_body(i)).encode()])
        assert len(path.read_bytes().splitlines()) < 20  # records still wait in the queue
        await server.shutdown()
        return server.answers

    answers = asyncio.run(scenario())
    # The file is complete by the time the server is told the shutdown is complete.
    assert answers == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert seen.lifespan == ["lifespan.startup", "lifespan.shutdown"]
    lines = read_lines(path)
    assert [line["payload"] for line in lines] == [chat_body(i) for i in range(20)]
    timestamps = [line["timestamp"] for line in lines]
    assert timestamps == sorted(timestamps) and timestamps[0] == 0


def test_from_environment_with_default_registry(tmp_path):
    from prometheus_client import REGISTRY, generate_latest

    path = tmp_path / "env" / "c.jsonl"
    env = {"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": json.dumps({"path": str(path), "format": "raw_payload"})}
    seen = Seen()
    mw = CaptureMiddleware(echo_app(seen), environ=env)
    before = REGISTRY.get_sample_value("nim_capture_records_written_total") or 0.0
    asyncio.run(call(mw, "/v1/chat/completions", [json.dumps(chat_body(4)).encode()]))
    mw.writer.close()
    assert read_lines(path) == [chat_body(4)]
    assert REGISTRY.get_sample_value("nim_capture_records_written_total") == before + 1
    exposed = generate_latest(REGISTRY).decode()
    for name in (
        "nim_capture_records_written_total",
        "nim_capture_bytes_written_total",
        'nim_capture_records_dropped_total{reason="queue_full"}',
    ):
        assert name in exposed


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"NIM_CAPTURE_ENABLE": "0"},
        {"NIM_CAPTURE_ENABLE": "bogus"},
        {"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": '{"path": "/proc/no/such/dir/c.jsonl"}'},
    ],
)
def test_capture_off_is_a_plain_pass_through(env):
    seen = Seen()
    mw = CaptureMiddleware(echo_app(seen), environ=env)
    assert mw.writer is None
    body = json.dumps(chat_body(5)).encode()
    assert asyncio.run(call(mw, "/v1/chat/completions", [body])) == (200, body)
    assert asyncio.run(lifespan(mw)) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
