"""The /v1 endpoints middleware in front of a small ASGI application that behaves as vLLM's routes do.

The real vLLM server is exercised in tests/e2e; these cases cover the states a live server rarely shows
(engine unhealthy, model not answering) in milliseconds.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from nim_specdec.server.endpoints import NimEndpointsMiddleware


class FakeVllm:
    """Routes /health, /metrics, /v1/models, /v1/completions; like vLLM, a completion gives up when the
    client disconnects before it is done."""

    def __init__(self, health=200, completion=200, models=("demo",)):
        self.health, self.completion, self.models = health, completion, models
        self.paths: list[str] = []

    async def __call__(self, scope, receive, send):
        self.paths.append(scope["path"])
        path = scope["path"]
        if path == "/health":
            await self.respond(send, self.health, b"")
        elif path == "/metrics":
            await self.respond(send, 200, b"# TYPE x_total counter\nx_total 1.0\n", b"text/plain")
        elif path == "/v1/models":
            await self.respond(send, 200, json.dumps({"data": [{"id": m} for m in self.models]}).encode())
        elif path == "/v1/completions":
            request = await receive()
            assert json.loads(request["body"])["max_tokens"] == 1
            # A disconnect arriving now would cancel the generation, as vLLM's with_cancellation does.
            waiter = asyncio.ensure_future(receive())
            await asyncio.sleep(0.01)
            if waiter.done():
                await self.respond(send, 499, b"null")
                return
            waiter.cancel()
            body = {"choices": [{"text": "x"}]} if self.completion == 200 else {"error": "engine dead"}
            await self.respond(send, self.completion, json.dumps(body).encode())
        else:
            await self.respond(send, 404, b"{}")

    @staticmethod
    async def respond(send, status, body, content_type=b"application/json"):
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]})
        await send({"type": "http.response.body", "body": body})


def get(app, path):
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [],
    }
    messages = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        messages.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in messages if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return status, body


@pytest.mark.parametrize(
    "inner, path, status, needle",
    [
        (FakeVllm(), "/v1/health/live", 200, b'"live"'),
        (FakeVllm(health=503), "/v1/health/live", 200, b'"live"'),
        (FakeVllm(), "/v1/health/ready", 200, b'"ready"'),
        (FakeVllm(health=503), "/v1/health/ready", 503, b"/health answered 503"),
        (FakeVllm(completion=500), "/v1/health/ready", 503, b"has not answered"),
        (FakeVllm(models=()), "/v1/health/ready", 503, b"has not answered"),
        (FakeVllm(), "/v1/metrics", 200, b"x_total 1.0"),
        (FakeVllm(), "/v1/models", 200, b'"demo"'),
        (FakeVllm(), "/nope", 404, b"{}"),
    ],
)
def test_endpoints(inner, path, status, needle):
    got_status, body = get(NimEndpointsMiddleware(inner), path)
    assert got_status == status and needle in body


def test_ready_asks_the_model_once_then_only_health():
    inner = FakeVllm()
    app = NimEndpointsMiddleware(inner)
    assert get(app, "/v1/health/ready")[0] == 200
    assert inner.paths == ["/health", "/v1/models", "/v1/completions"]
    inner.paths.clear()
    assert get(app, "/v1/health/ready")[0] == 200
    assert inner.paths == ["/health"]
    inner.health = 503  # the engine died after it was ready
    assert get(app, "/v1/health/ready")[0] == 503


def test_other_scopes_pass_through():
    seen = []

    async def inner(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(NimEndpointsMiddleware(inner)({"type": "lifespan"}, None, None))
    assert seen == ["lifespan"]


def test_spec_config_is_read_from_the_server_command_line(monkeypatch):
    import sys

    monkeypatch.setattr(
        sys,
        "argv",
        ["api_server", "--model", "m", "--speculative-config", '{"method":"ngram","num_speculative_tokens":2}'],
    )
    status, body = get(NimEndpointsMiddleware(FakeVllm()), "/v1/specdec/config")
    assert status == 200
    assert json.loads(body) == {
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 2},
        "source": "server command line",
    }
    monkeypatch.setattr(sys, "argv", ["api_server", "--model", "m"])
    assert json.loads(get(NimEndpointsMiddleware(FakeVllm()), "/v1/specdec/config")[1])["speculative_config"] is None


def test_one_middleware_stacks_capture_on_the_endpoints(monkeypatch):
    from nim_specdec.server.stack import NimCaptureAndEndpoints

    monkeypatch.delenv("NIM_CAPTURE_ENABLE", raising=False)
    inner = FakeVllm()
    app = NimCaptureAndEndpoints(inner)
    assert get(app, "/v1/health/live") == (200, b'{"status": "live"}')
    assert get(app, "/v1/metrics")[1].endswith(b"x_total 1.0\n") and inner.paths == ["/metrics"]
