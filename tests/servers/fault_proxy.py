"""A reverse HTTP proxy on loopback that forwards to a real server and injects faults on request.

The same faults then reach every fetcher whatever its protocol: a 5xx answer, a connection dropped
half-way through a body, a server that stops answering, or a slow body (to kill a download in the
middle). It also records the requests, so a test can count how many times a file was downloaded.
"""

from __future__ import annotations

import http.client
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


@dataclass
class Fault:
    kind: str  # "status" | "drop" | "stall" | "slow" | "rewrite"
    match: str  # substring of the request path (URL-quoted form) that selects the requests
    times: int = 1  # how many matching requests get it; -1 for all
    status: int = 503
    bytes_per_second: int = 20000
    method: str = "GET"
    replace: tuple[bytes, bytes] = (b"", b"")  # for "rewrite": the body's bytes to swap
    # for "status": the answer's headers and body, where a server's own matter (the Hub's X-Error-Message)
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"


@dataclass
class Record:
    method: str
    path: str
    status: int = 0
    signed: bool = False  # carried an Authorization header
    agent: str = ""  # User-Agent: which client made the request
    headers: frozenset[str] = frozenset()  # the names of the request's headers, lower case
    size: int = 0  # the body's length upstream
    sent: int = 0  # how much of it went out to the client: below size when the client hung up or it was cut


@dataclass
class ProxyState:
    upstream: tuple[str, int]
    faults: list[Fault] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.times != 0 and fault.method == method and fault.match in path:
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: ProxyState  # set on the subclass made per proxy

    def log_message(self, *args) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        record = Record(
            self.command,
            self.path,
            signed="Authorization" in self.headers,
            agent=self.headers.get("User-Agent", ""),
            headers=frozenset(k.lower() for k in self.headers),
        )
        with self.state.lock:
            self.state.records.append(record)
        fault = self.state.take_fault(self.command, self.path)
        if fault and fault.kind == "stall":
            self.state.stop.wait(120)
            self.close_connection = True
            return
        if fault and fault.kind == "status":
            record.status = fault.status
            payload = fault.body
            self.send_response(fault.status)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in fault.headers or (("Content-Type", "application/xml"),):
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            return
        conn = http.client.HTTPConnection(*self.state.upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if fault and fault.kind == "rewrite":
            data = data.replace(*fault.replace)
        record.status, record.size = resp.status, len(data)
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_HEADERS and k.lower() != "content-length":
                self.send_header(k, v)
        length = resp.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", length or str(len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if fault and fault.kind == "drop":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            record.sent = len(data) // 2
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if fault and fault.kind == "slow":
            step = max(1, fault.bytes_per_second // 20)  # every 50 ms; below 20 bytes a second, a byte at a time
            pause = max(0.05, step / max(1, fault.bytes_per_second))
            for i in range(0, len(data), step):
                if self.state.stop.is_set():
                    self.close_connection = True  # the client sees the body cut short, as from a dead server
                    break
                self.wfile.write(data[i : i + step])
                self.wfile.flush()
                record.sent = min(len(data), i + step)
                self.state.stop.wait(pause)
            return
        self.wfile.write(data)
        record.sent = len(data)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _forward


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # clients that time out or are killed reset their connections; that is the point here


class FaultProxy:
    def __init__(self, upstream_url: str, tls: tuple[str, str] | None = None) -> None:
        """tls: (certificate, key) files to serve HTTPS to the client; the upstream stays plain HTTP."""
        parts = urlsplit(upstream_url)
        self.state = ProxyState((parts.hostname or "127.0.0.1", parts.port or 80))
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = QuietServer(("127.0.0.1", 0), handler)
        self._scheme = "http"
        if tls:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self._scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host}:{port}"

    def start(self) -> "FaultProxy":
        self._thread.start()
        return self

    def close(self) -> None:
        self.state.stop.set()
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self.state.lock:
            self.state.faults.clear()
            self.state.records.clear()
        self.state.stop.clear()

    def inject(self, fault: Fault) -> None:
        with self.state.lock:
            self.state.faults.append(fault)

    def requests(self, method: str, match: str) -> list[Record]:
        with self.state.lock:
            return [r for r in self.state.records if r.method == method and match in r.path]
