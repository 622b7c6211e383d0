"""NIM endpoints served by the vLLM server itself, through `--middleware` (no extra process).

    GET /v1/metrics        the same Prometheus text as /metrics (the request is re-routed to it)
    GET /v1/health/live    200 while the process serves
    GET /v1/specdec/config the speculative config on this server's command line (null when off)
    GET /v1/health/ready   200 once the model has answered a one-token completion and /health is 200; else 503
    GET /v1/version        the launcher's and vLLM's versions
    GET /v1/metadata       the served model names, the speculative method and config, the versions
    POST (vLLM's paths)    passed on; refused 503 with Retry-After once SIGTERM's drain has begun (admission.py)

This middleware is vLLM's outermost, so these paths answer without an API key (as NIM's do) while vLLM's
authentication still guards /v1/models and the completions. The readiness probe's own requests go
inside it, so they carry one of the keys the server was given (read from vLLM's parsed arguments, never
logged nor returned).

vLLM starts listening only after the engine has loaded the model, so before that ready is refused; between
the socket opening and the first answer it is 503. The first successful probe is remembered on the instance:
later probes only ask /health, so that a readiness poll never queues generations.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

from nim_specdec.asgi_types import ASGIApp, Message, Receive, Scope, Send  # noqa: F401
from nim_specdec.processes import engine_death
from nim_specdec.server import admission
from nim_specdec.server.identity import (
    app_state,
    installed_vllm_version,
    metadata_document,
    resolved_method,
    served_model_names,
    server_api_key,
    version_document,
)
from nim_specdec.server.ranks import parallel_of, ranks_document
from nim_specdec.server.spec_info import shown_speculative_config, spec_config_document

_log = logging.getLogger(__name__)

LIVE = "/v1/health/live"
SPEC_CONFIG = "/v1/specdec/config"
READY = "/v1/health/ready"
VERSION = "/v1/version"
METADATA = "/v1/metadata"
METRICS_ALIAS = {"/v1/metrics": "/metrics", "/v1/metrics/": "/metrics"}


async def _respond(send: Send, status: int, payload: dict) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def call_inner(
    app: ASGIApp, scope: Scope, method: str, path: str, body: bytes = b"", api_key: str | None = None
) -> tuple[int, bytes]:
    """Run one request through the wrapped application in-process; returns (status, body)."""
    inner = dict(scope)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if api_key:
        headers.append((b"authorization", b"Bearer " + api_key.encode()))
    inner.update(method=method, path=path, raw_path=path.encode(), query_string=b"", headers=headers)
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    finished = asyncio.Event()
    status = 500
    chunks: list[bytes] = []

    async def receive() -> Message:
        if pending:
            return pending.pop()
        # vLLM watches receive() to cancel requests whose client left: the client "leaves" only once
        # the response is complete.
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                finished.set()

    try:
        await app(inner, receive, send)
    finally:
        finished.set()
    return status, b"".join(chunks)


class NimEndpointsMiddleware:
    """Pure ASGI middleware: vLLM adds it with app.add_middleware(NimEndpointsMiddleware)."""

    def __init__(self, app: ASGIApp, **_: Any) -> None:
        self.app = app
        self.model_answered = False
        self.vllm_version: str | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        try:
            await self._http(scope, receive, send)
        finally:
            engine_death.note(getattr(app_state(scope), "engine_client", None))

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if path in METRICS_ALIAS:
            scope = dict(scope, path=METRICS_ALIAS[path], raw_path=METRICS_ALIAS[path].encode())
            await self.app(scope, receive, send)
        elif path == LIVE:
            await _respond(send, 200, {"status": "live"})
        elif path == SPEC_CONFIG:
            await _respond(send, 200, spec_config_document(sys.argv, os.environ))
        elif path == READY:
            ready, detail = await self._ready(scope)
            await _respond(send, 200 if ready else 503, {"status": "ready" if ready else "not ready", **detail})
        elif path == VERSION:
            await _respond(send, 200, version_document(self._vllm_version()))
        elif path == METADATA:
            state = app_state(scope)
            vllm_config = getattr(state, "vllm_config", None)
            document = metadata_document(
                served_model_names(getattr(state, "args", None)),
                shown_speculative_config(sys.argv, os.environ),
                resolved_method(vllm_config),
                self._vllm_version(),
            )
            parallel = parallel_of(vllm_config)
            if parallel is not None:
                document["parallel"] = ranks_document(*parallel, document["speculative_decoding"]["method"])
            await _respond(send, 200, document)
        elif scope.get("method") == "POST":
            # A request for vLLM's engine: refused with 503, never answered 500, once the drain has begun.
            await admission.admit(self.app, scope, receive, send, getattr(app_state(scope), "engine_client", None))
        else:
            await self.app(scope, receive, send)

    def _vllm_version(self) -> str:
        if self.vllm_version is None:
            self.vllm_version = installed_vllm_version()
        return self.vllm_version

    async def _ready(self, scope: Scope) -> tuple[bool, dict]:
        try:
            status, _ = await call_inner(self.app, scope, "GET", "/health")
            if status != 200:
                return False, {"detail": f"/health answered {status}"}
            if not self.model_answered:
                self.model_answered = await self._model_answers(scope)
            if not self.model_answered:
                return False, {"detail": "the model has not answered a completion yet"}
            return True, {}
        except Exception as err:  # noqa: BLE001 - a probe failure means "not ready", never a crash
            _log.warning("readiness probe failed", exc_info=True)
            return False, {"detail": f"probe failed: {type(err).__name__}: {err}"}

    async def _model_answers(self, scope: Scope) -> bool:
        # vLLM's authentication sits inside this middleware: the probe shows it a key the server accepts.
        key = server_api_key(getattr(app_state(scope), "args", None), os.environ)
        status, body = await call_inner(self.app, scope, "GET", "/v1/models", api_key=key)
        if status != 200:
            return False
        models = json.loads(body).get("data") or []
        if not models:
            return False
        request = {"model": models[0]["id"], "prompt": "ready?", "max_tokens": 1, "temperature": 0}
        status, body = await call_inner(
            self.app, scope, "POST", "/v1/completions", json.dumps(request).encode(), api_key=key
        )
        return status == 200 and bool(json.loads(body).get("choices"))
