"""CaptureMiddleware: records the request bodies of matching endpoints inside the vLLM API server.

The launcher adds it with `--middleware nim_specdec.capture.middleware.CaptureMiddleware`; vLLM
calls `app.add_middleware(CaptureMiddleware)`, so Starlette builds it as `CaptureMiddleware(app)`
in each API server process. It reads NIM_CAPTURE_ENABLE / NIM_CAPTURE_ARGS (inherited from the
launcher) then, never at import.

It is a pure ASGI middleware: it tees the `http.request` messages the application itself
receives, so the request is neither buffered, delayed nor changed, and the response is not
touched (streaming responses included). When the last body chunk has passed, the whole body is
queued for the writer thread with the request's arrival time; a full queue drops the record, not
the request. Only POST requests whose path matches `endpoint_pattern` (an RE2 search) are recorded, and
only once their body is complete: a client that disconnects mid-body leaves no record. The record
is written whatever the response turns out to be.

The queue is flushed when the server shuts down: on the ASGI lifespan shutdown when the server
runs it, and in any case at interpreter exit (vLLM's SIGTERM handler cancels the HTTP server,
which can skip the lifespan shutdown, then returns normally, so atexit runs).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import time
from typing import Mapping

from nim_specdec.asgi_types import ASGIApp, Message, Receive, Scope, Send
from nim_specdec.capture.counters import capture_counters
from nim_specdec.capture.file import open_capture_file
from nim_specdec.capture.formats import FORMATS
from nim_specdec.capture.writer import CaptureWriter
from nim_specdec.config.capture_config import CaptureConfig, parse_capture
from nim_specdec.errors import LauncherError
from nim_specdec.files.trust import system_dir_problem
from nim_specdec.text.linear_regex import PatternError, compile_linear, search_bounded

# A child of the "vllm" logger, so that the messages come out through the server's own log handler.
log = logging.getLogger("vllm.nim_specdec.capture")


class _Clock:
    """Milliseconds since the first matching request of this process (see formats.py for why)."""

    def __init__(self) -> None:
        self._origin: float | None = None

    def now_ms(self) -> float:
        now = time.monotonic()
        if self._origin is None:
            self._origin = now
        return (now - self._origin) * 1000.0


def writer_from_config(cfg: CaptureConfig) -> CaptureWriter | None:
    """A started writer for `cfg`, or None (with a warning) when the file cannot be opened."""
    problem = system_dir_problem(os.path.dirname(cfg.path) or "/")
    if problem:  # a server started without the launcher: the launcher refuses this at plan time
        log.warning("payload capture is off: refusing %r: %s", cfg.path[:200], problem)
        return None
    try:
        fd = open_capture_file(cfg.path)
    except OSError as err:
        log.warning("payload capture is off: cannot write %r (%s)", cfg.path, err.strerror or err)
        return None
    return CaptureWriter(fd, FORMATS[cfg.format], capture_counters())


class CaptureMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        config: CaptureConfig | None = None,
        writer: CaptureWriter | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.app = app
        self.writer: CaptureWriter | None = None
        if config is None:
            try:
                config = parse_capture(os.environ if environ is None else environ)
            except LauncherError as err:
                # The launcher refuses these before exec; a server started another way keeps serving.
                log.warning("payload capture is off: %s", err.one_line())
                return
        if config is None:
            return
        try:
            self._pattern = compile_linear(config.endpoint_pattern)
        except PatternError as err:
            log.warning("payload capture is off: endpoint_pattern %r: %s", config.endpoint_pattern[:200], err)
            return
        self.writer = writer if writer is not None else writer_from_config(config)
        if self.writer is not None:
            self._clock = _Clock()
            atexit.register(self.writer.close)
            log.info(
                "payload capture on: %s requests matching %r -> %s", config.format, config.endpoint_pattern, config.path
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.writer is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self.app(scope, receive, self._flushing_send(send))
        elif self._matches(scope):
            await self.app(scope, self._teeing_receive(receive), send)
        else:
            await self.app(scope, receive, send)

    def _matches(self, scope: Scope) -> bool:
        return (
            scope["type"] == "http"
            and scope.get("method") == "POST"
            and search_bounded(self._pattern, scope.get("path", ""))
        )

    def _teeing_receive(self, receive: Receive) -> Receive:
        writer = self.writer
        timestamp_ms = self._clock.now_ms()
        chunks: list[bytes] = []
        done = False

        async def tee() -> Message:
            nonlocal done
            message = await receive()
            if not done and message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    done = True
                    writer.submit(timestamp_ms, b"".join(chunks))
                    chunks.clear()
            return message

        return tee

    def _flushing_send(self, send: Send) -> Send:
        writer = self.writer

        async def flushing_send(message: Message) -> None:
            if message["type"] in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                # Joining the writer thread blocks; keep the event loop free while it drains.
                await asyncio.get_running_loop().run_in_executor(None, writer.close)
            await send(message)

        return flushing_send
