"""The ASGI callable types shared by the middlewares that run inside the vLLM server (endpoints, capture). A ground
floor module: it imports nothing of the package."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
