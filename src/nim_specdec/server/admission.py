"""Whether the server still admits a request once SIGTERM has started vLLM's drain, and the one answer when not.

vLLM 0.32's shutdown (vllm/v1/engine/async_llm.py, AsyncLLM.shutdown) closes the renderer first, whose
thread pool tokenizes every prompt (vllm/renderers/base.py, `_executor`), and only then drains the engine.
A request that has not reached the engine by then fails inside vLLM with the pool's
`RuntimeError: cannot schedule new futures after shutdown`, which vLLM's error mapping
(vllm/entrypoints/serve/exception_handling/error_response.py) answers as HTTP 500: an internal error for
what is a refusal. The streams the engine already holds are drained and end normally.

So, once that pool refuses work, the endpoints middleware answers a request that would enter vLLM 503 with
Retry-After (the status vLLM itself gives a request it cannot queue, AsyncLLM.check_admission), and turns a
500 that vLLM answers meanwhile into the same 503: a request in the same millisecond as the signal may pass
the door before the pool closes and fail behind it. Nothing is admitted by this answer, so a client (or a
load balancer) retries it on another replica.
"""

from __future__ import annotations

import json
from typing import Any

from nim_specdec.asgi_types import ASGIApp, Message, Receive, Scope, Send

REFUSED_STATUS = 503
RETRY_AFTER_S = 1
REFUSAL = {
    "error": {
        "message": "the server is shutting down (SIGTERM): the request was not admitted; retry it on another replica",
        "type": "ServiceUnavailableError",
        "code": REFUSED_STATUS,
    }
}


def _noop() -> None:
    return None


def stopping(engine_client: Any) -> bool:
    """True once vLLM's input pool refuses work: its shutdown has begun, and nothing new reaches the engine.

    Asked of the pool itself (Executor.submit raises RuntimeError after shutdown), not of a flag beside it.
    A server without that pool (another vLLM layout, no engine yet) reads as admitting: vLLM decides."""
    pool = getattr(getattr(engine_client, "renderer", None), "_executor", None)
    submit = getattr(pool, "submit", None)
    if submit is None:
        return False
    try:
        submit(_noop)
    except RuntimeError:
        return True
    except Exception:  # noqa: BLE001 - a pool in another state is vLLM's to report, not a refusal of ours
        return False
    return False


async def refuse(send: Send) -> None:
    body = json.dumps(REFUSAL).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_S).encode()),
    ]
    await send({"type": "http.response.start", "status": REFUSED_STATUS, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def admit(app: ASGIApp, scope: Scope, receive: Receive, send: Send, engine_client: Any) -> None:
    """Pass a request for vLLM's engine to `app`, or refuse it: at the door once the pool is shut, and behind it
    when vLLM fails it meanwhile, whether as a 500 it answers or as the exception itself (the pool's
    RuntimeError leaves vLLM's routes and reaches the outermost error handler, which answers 500).

    Whether the server stops is asked when the failure comes: the request that passed the door as the pool
    closed meets the refusal it would have met a moment later. A failure while serving stays vLLM's."""
    if stopping(engine_client):
        await refuse(send)
        return
    started = dropping = False

    async def guarded(message: Message) -> None:
        nonlocal started, dropping
        kind = message.get("type")
        if kind == "http.response.start":
            if message.get("status") == 500 and stopping(engine_client):
                dropping = True
                return
            started = True
        if dropping:
            if kind == "http.response.body" and not message.get("more_body", False):
                dropping = False
                started = True
                await refuse(send)
            return
        await send(message)

    try:
        await app(scope, receive, guarded)
    except Exception:
        if started or not stopping(engine_client):
            raise
        await refuse(send)
