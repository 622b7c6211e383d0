"""The drain's door: once vLLM's input pool is shut (SIGTERM), a POST for vLLM is refused 503, never answered 500.

The pool is a real ThreadPoolExecutor, shut as vLLM's AsyncLLM.shutdown shuts it; the application behind the
middleware tokenizes through it as vLLM's renderer does, so a request that meets the closed pool fails there
with the pool's own RuntimeError and a 500, as vLLM answers it. The real server is in tests/e2e/test_lifecycle.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from nim_specdec.server import admission
from nim_specdec.server.endpoints import NimEndpointsMiddleware


class Renderer:
    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1)


class VllmLike:
    """POST /v1/completions tokenizes on the renderer's pool. When it is shut, the pool's RuntimeError leaves the
    route, as vLLM 0.32's completion route lets it (its outermost error handler then answers 500); with
    `answers_500` the route answers the 500 itself instead. `before_tokenize` runs between the door and the
    pool, where a signal may land."""

    def __init__(self, engine, answers_500: bool = False) -> None:
        self.engine = engine
        self.answers_500 = answers_500
        self.before_tokenize = None
        self.calls = 0

    async def __call__(self, scope, receive, send):
        self.calls += 1
        await receive()
        if self.before_tokenize:
            self.before_tokenize()
        try:
            await asyncio.wrap_future(self.engine.renderer._executor.submit(len, "prompt"))
            status, body = 200, {"choices": [{"text": "x", "finish_reason": "length"}]}
        except RuntimeError as err:
            if not self.answers_500:
                raise
            status, body = 500, {"error": {"message": str(err), "type": "InternalServerError", "code": 500}}
        raw = json.dumps(body).encode()
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
        )
        await send({"type": "http.response.body", "body": raw[:5], "more_body": True})
        await send({"type": "http.response.body", "body": raw[5:]})


def post(app, engine, path="/v1/completions"):
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [],
        "app": SimpleNamespace(state=SimpleNamespace(engine_client=engine)),
    }
    messages = []

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        messages.append(message)

    asyncio.run(app(scope, receive, send))
    starts = [m for m in messages if m["type"] == "http.response.start"]
    assert len(starts) == 1, messages
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    assert not messages[-1].get("more_body", False), messages
    return starts[0]["status"], dict(starts[0]["headers"]), json.loads(body)


@pytest.fixture
def served():
    engine = SimpleNamespace(renderer=Renderer())
    inner = VllmLike(engine)
    yield engine, inner, NimEndpointsMiddleware(inner)
    engine.renderer._executor.shutdown()


def test_a_request_before_the_signal_is_served(served):
    engine, inner, app = served
    status, _, body = post(app, engine)
    assert status == 200 and body["choices"][0]["finish_reason"] == "length"


def test_a_request_after_the_signal_is_refused_503_at_the_door(served):
    engine, inner, app = served
    engine.renderer._executor.shutdown(wait=False)
    status, headers, body = post(app, engine)
    assert status == 503 and headers[b"retry-after"] == b"1", body
    assert body["error"]["type"] == "ServiceUnavailableError" and "shutting down" in body["error"]["message"]
    assert inner.calls == 0  # never reached vLLM


@pytest.mark.parametrize("answers_500", [False, True], ids=["raised", "answered-500"])
def test_a_request_that_passed_the_door_as_the_pool_closed_is_refused_503_not_500(served, answers_500):
    # The same millisecond as the signal: the door saw an open pool, vLLM's tokenizer a shut one.
    engine, inner, app = served
    inner.answers_500 = answers_500
    inner.before_tokenize = lambda: engine.renderer._executor.shutdown(wait=False)
    status, headers, body = post(app, engine)
    assert inner.calls == 1
    assert status == 503 and headers[b"retry-after"] == b"1", body


def test_a_500_while_serving_stays_vllms_answer(served):
    # Before the drain, a 500 is vLLM's to give: the middleware does not hide an internal error.
    engine, _, _ = served

    async def failing(scope, receive, send):
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b'{"error": "boom"}'})

    status, _, body = post(NimEndpointsMiddleware(failing), engine)
    assert status == 500 and body == {"error": "boom"}

    async def raising(scope, receive, send):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        post(NimEndpointsMiddleware(raising), engine)


@pytest.mark.parametrize("engine", [None, SimpleNamespace(), SimpleNamespace(renderer=SimpleNamespace())])
def test_a_server_without_that_pool_reads_as_admitting(engine):
    assert admission.stopping(engine) is False


def _installed_vllm_file(relative: str) -> str:
    spec = importlib.util.find_spec("vllm")  # the package's location, without importing it
    assert spec is not None and spec.submodule_search_locations, "vLLM is not installed"
    return (Path(list(spec.submodule_search_locations)[0]) / relative).read_text()


def test_the_installed_vllm_shuts_the_renderer_pool_before_the_drain():
    """What `stopping` reads is what vLLM shuts first: the renderer's `_executor`, before the engine drains."""
    renderer = _installed_vllm_file("renderers/base.py")
    assert "self._executor = " in renderer and "self._resources.callback(self._executor.shutdown" in renderer
    shutdown = _installed_vllm_file("v1/engine/async_llm.py").split("def shutdown(self", 1)[1].split("\n    def ", 1)[0]
    assert shutdown.index("renderer.shutdown()") < shutdown.index("engine_core.shutdown(")
