"""A small ASGI application and a driver that feeds it request chunks, for the middleware's unit tests."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field


@dataclass
class Seen:
    """What the application received, to show that the middleware does not change requests."""

    bodies: list[bytes] = field(default_factory=list)
    lifespan: list[str] = field(default_factory=list)


def echo_app(seen: Seen, stream_chunks: int = 3):
    """Reads the whole body, then streams it back in `stream_chunks` parts (like an SSE response)."""

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                seen.lifespan.append(message["type"])
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        seen.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        step = max(1, len(body) // stream_chunks)
        for start in range(0, len(body), step):
            await send({"type": "http.response.body", "body": body[start : start + step], "more_body": True})
            await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


async def call(app, path: str, chunks: list[bytes], method: str = "POST") -> tuple[int, bytes]:
    """Sends one request whose body arrives in `chunks`, yielding between chunks; returns (status, body)."""
    pending = list(chunks) or [b""]
    sent: list[dict] = []

    async def receive():
        await asyncio.sleep(0)
        if pending:
            body = pending.pop(0)
            return {"type": "http.request", "body": body, "more_body": bool(pending)}
        await asyncio.Event().wait()  # the client stays connected until the response is done

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


class Lifespan:
    """Drives the ASGI lifespan protocol the way a server does: one long call, startup then shutdown."""

    def __init__(self, app) -> None:
        self._app = app
        self._incoming: asyncio.Queue = asyncio.Queue()
        self.answers: list[str] = []
        self._task: asyncio.Task | None = None

    async def _receive(self):
        return await self._incoming.get()

    async def _send(self, message):
        self.answers.append(message["type"])

    async def startup(self) -> None:
        self._task = asyncio.ensure_future(
            self._app({"type": "lifespan", "asgi": {"version": "3.0"}}, self._receive, self._send)
        )
        await self._incoming.put({"type": "lifespan.startup"})
        while not self.answers:
            await asyncio.sleep(0)

    async def shutdown(self) -> None:
        await self._incoming.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(self._task, 30)


async def lifespan(app) -> list[str]:
    """A startup immediately followed by a shutdown; returns the answers the server side received."""
    driver = Lifespan(app)
    await driver.startup()
    await driver.shutdown()
    return driver.answers


def chat_body(i: int, stream: bool = False) -> dict:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": f'request {i}: \u00e9t\u00e9\n"quoted"'}],
        "max_tokens": 8 + i,
        "stream": stream,
        "temperature": 0,
    }


def split(data: bytes, parts: int) -> list[bytes]:
    step = max(1, -(-len(data) // parts))
    return [data[i : i + step] for i in range(0, len(data), step)]


def read_lines(path) -> list[dict]:
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "the capture file ends mid-line"
    # Split on \n only, as AIPerf's loaders do (str.splitlines would also split on U+2028 and others).
    return [json.loads(line) for line in data.split(b"\n")[:-1]]
