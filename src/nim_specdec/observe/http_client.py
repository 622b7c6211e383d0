"""One HTTP request with an overall deadline and a size cap: the only way the launcher's tools read a server.

A socket timeout alone bounds each read, not the request: a server that trickles one byte every few
seconds (or an endless body) would keep `urlopen(...).read()` going forever or fill the memory. Here a
timer shuts the socket down when the deadline passes, whatever phase the request is in, and the body is
read in chunks up to `max_bytes`. Either limit, a refused connection or a malformed answer is one
UnreachableError (exit 4) naming the URL; a malformed URL is a ConfigError (exit 2). Standard library only: smoke runs from any Python.
"""  # noqa: E501

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any, Mapping

from nim_specdec.errors import ConfigError, UnreachableError

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def request(
    url: str,
    *,
    where: str,
    deadline: float,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Answer:
    """GET (or POST when `body` is given) `url`; any status is returned, every failure to get one is raised."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            where, f"{url!r} is not an http:// or https:// URL", "give a URL such as http://localhost:8000"
        )
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:
        conn = connection_type(parts.hostname, parts.port, timeout=deadline)
    except ValueError as err:  # a malformed port
        raise ConfigError(
            where, f"{url!r} is not a valid URL ({err})", "give a URL such as http://localhost:8000"
        ) from None
    expired = threading.Event()
    sockets: list[socket.socket] = []

    def cut() -> None:
        expired.set()
        # The connection hands its socket to the response (and forgets it) when the answer ends with the
        # connection, so the socket is kept here from the start.
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(deadline, cut)
    timer.daemon = True
    timer.start()
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    try:
        conn.connect()
        sockets.append(conn.sock)
        if expired.is_set():
            cut()
        conn.request("POST" if body is not None else "GET", path, body=body, headers=dict(headers or {}))
        response = conn.getresponse()
        chunks, size = [], 0
        while chunk := response.read(_CHUNK):
            size += len(chunk)
            if size > max_bytes:
                raise UnreachableError(
                    where,
                    f"{url} answered more than {max_bytes // (1024 * 1024)} MiB",
                    "point at the right endpoint; this answer is not what it should serve",
                )
            chunks.append(chunk)
            if expired.is_set():
                break
        if expired.is_set():
            raise TimeoutError
        return Answer(response.status, b"".join(chunks))
    except UnreachableError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as err:
        if expired.is_set() or isinstance(err, TimeoutError):
            raise UnreachableError(
                where,
                f"{url} did not answer in full within {deadline:g} s",
                "check that the server is up and not overloaded",
            ) from None
        reason = " ".join(str(err).split())[:200] or type(err).__name__
        raise UnreachableError(
            where, f"cannot read {url} ({reason})", "check that the server is up and the URL"
        ) from None
    finally:
        timer.cancel()
        conn.close()


def request_json(
    url: str,
    *,
    where: str,
    deadline: float,
    payload: Any = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, Any]:
    """(status, decoded JSON body); a 2xx answer that is not JSON is an UnreachableError (it answers wrongly)."""
    body = None if payload is None else json.dumps(payload).encode()
    headers = {**({"Content-Type": "application/json"} if body is not None else {}), **(headers or {})}
    answer = request(url, where=where, deadline=deadline, body=body, headers=headers, max_bytes=max_bytes)
    try:
        return answer.status, json.loads(answer.body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        if 200 <= answer.status < 300:
            raise UnreachableError(
                where,
                f"{url} answered {answer.status} with a body that is not JSON",
                "point at an OpenAI-compatible server",
            ) from None
        return answer.status, answer.text()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
