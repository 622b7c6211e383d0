"""Our middlewares as one ASGI class, so that vLLM gets a single `--middleware`.

vLLM's argument parser logs "Found duplicate keys --middleware" when the option is repeated (it takes
every value, but warns as if one overrode another). The order is the one vLLM would build from
`--middleware endpoints --middleware capture`: the last added is the outermost, so capture sees every
request first and the endpoints answer the NIM paths inside it.
"""

from __future__ import annotations

from typing import Any

from nim_specdec.capture.middleware import CaptureMiddleware
from nim_specdec.server.endpoints import ASGIApp, NimEndpointsMiddleware, Receive, Scope, Send


class NimCaptureAndEndpoints:
    def __init__(self, app: ASGIApp, **_: Any) -> None:
        # Capture reads NIM_CAPTURE_* itself, as when vLLM adds it alone.
        self.app = CaptureMiddleware(NimEndpointsMiddleware(app))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
