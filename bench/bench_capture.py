"""Payload capture cost: the same chat requests with capture on and off, side by side, plus the writer's throughput.

Two uvicorn servers run the same streaming chat stand-in (a few SSE chunks with a short pause between
them, like a small model's tokens), one behind CaptureMiddleware (mooncake_payload into a temporary
file), one without. Each request is sent to both servers, in random order, over kept-alive
connections, so load and noise hit both alike. A stand-in instead of vLLM keeps the server time short
and steady: the ratio then shows the middleware's own cost, which a real model's latency would hide.

Then the middleware's own event-loop time per request, against a no-op application called directly
(so that nothing else is in the figure), and the writer alone: records of a typical chat request body pushed through CaptureWriter into a
file, timed from the first submit to the end of the flush.

    PYTHONPATH=src python bench/bench_capture.py [--requests 1500] [--concurrency 2]
"""  # noqa: E501

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

TOKENS = 8
TOKEN_PAUSE_S = 0.002


def chat_app():
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for i in range(TOKENS):
            await asyncio.sleep(TOKEN_PAUSE_S)
            chunk = {"choices": [{"index": 0, "delta": {"content": f" t{i}"}}], "model": request["model"]}
            await send(
                {
                    "type": "http.response.body",
                    "body": b"data: " + json.dumps(chunk).encode() + b"\n\n",
                    "more_body": True,
                }
            )
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    return app


def serve(port: int, capture_path: str | None) -> None:
    import uvicorn

    app = chat_app()
    if capture_path:
        from nim_specdec.capture.middleware import CaptureMiddleware
        from nim_specdec.config.capture_config import CaptureConfig

        app = CaptureMiddleware(app, config=CaptureConfig(capture_path, "mooncake_payload"))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", access_log=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request_body(i: int) -> dict:
    return {
        "model": "m",
        "stream": True,
        "max_tokens": 64,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant. " * 8},
            {"role": "user", "content": f"Question {i}: " + "explain speculative decoding. " * 20},
        ],
    }


async def drive(urls: dict[str, str], count: int, concurrency: int) -> dict[str, dict[int, float]]:
    """Latency in seconds of request i on each server: {name: {i: seconds}}."""
    import httpx

    latencies: dict[str, dict[int, float]] = {name: {} for name in urls}
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one(name: str, i: int) -> None:
            start = time.perf_counter()
            async with client.stream("POST", urls[name], json=request_body(i)) as response:
                async for _ in response.aiter_bytes():
                    pass
                assert response.status_code == 200
            latencies[name][i] = time.perf_counter() - start

        async def pair(i: int) -> None:
            async with gate:
                order = list(urls)
                random.shuffle(order)
                for name in order:
                    await one(name, i)

        await asyncio.gather(*(pair(i) for i in range(-20, 0)))  # warm-up: connections, imports
        for values in latencies.values():
            values.clear()
        await asyncio.gather(*(pair(i) for i in range(count)))
    return latencies


def wait_ready(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"bench server on port {port} did not start")


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def middleware_cost_us(folder: Path, calls: int) -> tuple[float, float]:
    """Event-loop time per request of a no-op application called directly, without and with capture (µs)."""
    from nim_specdec.capture.middleware import CaptureMiddleware
    from nim_specdec.config.capture_config import CaptureConfig

    body = json.dumps(request_body(0)).encode()
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": []}

    async def app(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        pass

    plain = app
    capturing = CaptureMiddleware(app, config=CaptureConfig(str(folder / "cost.jsonl")))

    async def timed(target, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            await target(scope, receive, send)
        return time.perf_counter() - start

    async def run() -> tuple[float, float]:
        totals = {"off": 0.0, "on": 0.0}
        for _ in range(10):  # alternate blocks so that drift hits both
            totals["off"] += await timed(plain, calls // 10)
            totals["on"] += await timed(capturing, calls // 10)
            await asyncio.sleep(0.05)  # let the writer thread drain, as it would between requests
        return totals["off"] / calls * 1e6, totals["on"] / calls * 1e6

    result = asyncio.run(run())
    capturing.writer.close()
    return result


def writer_throughput(folder: Path, records: int) -> tuple[float, int]:
    from prometheus_client import CollectorRegistry

    from nim_specdec.capture.counters import capture_counters
    from nim_specdec.capture.file import open_capture_file
    from nim_specdec.capture.formats import FORMATS
    from nim_specdec.capture.writer import CaptureWriter

    body = json.dumps(request_body(0)).encode()
    counters = capture_counters(CollectorRegistry())
    writer = CaptureWriter(
        open_capture_file(str(folder / "writer.jsonl")), FORMATS["mooncake_payload"], counters, queue_size=records
    )
    start = time.perf_counter()
    for i in range(records):
        writer.submit(float(i), body)
    writer.close()
    elapsed = time.perf_counter() - start
    assert counters.stats.written == records, counters.stats
    return records / elapsed, len(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1500, help="requests per server (default 1500)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--writer-records", type=int, default=50000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        capture = folder / "capture.jsonl"
        ports = {"off": free_port(), "on": free_port()}
        ctx = multiprocessing.get_context("spawn")
        servers = [
            ctx.Process(target=serve, args=(ports["off"], None), daemon=True),
            ctx.Process(target=serve, args=(ports["on"], str(capture)), daemon=True),
        ]
        for p in servers:
            p.start()
        try:
            for port in ports.values():
                wait_ready(port)
            urls = {name: f"http://127.0.0.1:{port}/v1/chat/completions" for name, port in ports.items()}
            latencies = asyncio.run(drive(urls, args.requests, args.concurrency))
        finally:
            for p in servers:
                p.terminate()
            for p in servers:
                p.join(30)
        captured = len(capture.read_bytes().splitlines())
        rate, size = writer_throughput(folder, args.writer_records)
        cost_off, cost_on = middleware_cost_us(folder, 4000)

    on, off = list(latencies["on"].values()), list(latencies["off"].values())
    # The same request on both servers, one right after the other: the ratio of each pair cancels
    # most of the noise of a shared machine.
    paired = statistics.median(latencies["on"][i] / latencies["off"][i] for i in latencies["on"])
    print(
        f"requests per server: {len(on)}, concurrency {args.concurrency}, "
        f"{TOKENS} streamed chunks of {TOKEN_PAUSE_S * 1000:.0f} ms; lines captured: {captured} "
        f"(warm-up included)"
    )
    for q in (50, 99):
        p_on, p_off = percentile(on, q), percentile(off, q)
        print(
            f"p{q} latency  capture off {p_off * 1000:7.2f} ms   on {p_on * 1000:7.2f} ms   "
            f"ratio on/off {p_on / p_off:.3f}"
        )
    print(f"median of per-request ratios on/off (paired) {paired:.3f}")
    print(
        f"event-loop time per request, no-op app: {cost_off:.1f} µs without capture, {cost_on:.1f} µs with "
        f"(+{cost_on - cost_off:.1f} µs)"
    )
    print(f"writer: {args.writer_records} records of {size} B: {rate:,.0f} records/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
