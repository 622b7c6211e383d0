"""The endpoints middleware outside vLLM's own AuthenticationMiddleware, stacked as vLLM stacks them when
the server has --api-key: the NIM paths answer without a key, the readiness probe gets through, and
vLLM's routes still ask for one. The live server with two keys: tests/e2e/test_api_keys.py."""

from __future__ import annotations

import asyncio
import json
import logging
from argparse import Namespace
from types import SimpleNamespace

import pytest
from test_asgi_endpoints import FakeVllm
from vllm.entrypoints.serve.middleware.authenticate import AuthenticationMiddleware

from nim_specdec.server.endpoints import NimEndpointsMiddleware

KEYS = ["first-key-1234", "second-key-5678"]


def stack(keys=KEYS, args_keys=KEYS):
    """(the app vLLM builds, its inner routes, the application object Starlette puts in each scope)."""
    inner = FakeVllm()
    app = SimpleNamespace(
        state=SimpleNamespace(args=Namespace(api_key=args_keys, served_model_name=["demo"], model="/ws/target"))
    )
    return NimEndpointsMiddleware(AuthenticationMiddleware(inner, tokens=keys)), inner, app


def call(app, application, path, key=None, method="GET", body=b""):
    headers = [(b"authorization", f"Bearer {key}".encode())] if key else []
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "app": application,
        "root_path": "",
    }
    messages, pending = [], [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if pending:
            return pending.pop()
        await asyncio.sleep(3600)

    async def send(message):
        messages.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in messages if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")


@pytest.mark.parametrize("path", ["/v1/health/live", "/v1/health/ready", "/v1/version", "/v1/metadata"])
def test_nim_paths_answer_without_a_key(path):
    app, _, application = stack()
    assert call(app, application, path)[0] == 200


def test_the_readiness_probe_gets_through_vllms_authentication(caplog):
    app, inner, application = stack()
    with caplog.at_level(logging.DEBUG):
        status, body = call(app, application, "/v1/health/ready")
    assert (status, json.loads(body)) == (200, {"status": "ready"})
    assert inner.paths == ["/health", "/v1/models", "/v1/completions"]  # the model answered behind the key
    assert not any(key in caplog.text for key in KEYS)


def test_the_probe_uses_vllm_api_key_when_the_arguments_have_none(monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", KEYS[1])
    app, inner, application = stack(keys=[KEYS[1]], args_keys=None)
    assert call(app, application, "/v1/health/ready")[0] == 200 and "/v1/completions" in inner.paths


def test_without_a_key_the_probe_is_refused_and_says_not_ready(monkeypatch):
    # The state the probe was in before it showed a key: vLLM answers 401 and the server is never ready.
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    app, inner, application = stack(args_keys=None)
    status, body = call(app, application, "/v1/health/ready")
    assert status == 503 and b"has not answered" in body
    assert "/v1/models" not in inner.paths  # vLLM's authentication stopped it
    assert not any(key.encode() in body for key in KEYS)


@pytest.mark.parametrize("key, status", [(None, 401), ("wrong-key-0000", 401), (KEYS[0], 200), (KEYS[1], 200)])
def test_vllms_routes_still_need_a_key(key, status):
    app, _, application = stack()
    assert call(app, application, "/v1/models", key)[0] == status
