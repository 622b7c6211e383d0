"""Start `nim-specdec serve` as a child process on loopback, wait until it answers, and always stop it.

The one way the project starts a vLLM server of its own (end-to-end tests, `tune`): the child gets a
process group of its own, so that stopping it also ends vLLM's engine processes, and every wait is
bounded. A server that exits or is not ready in time raises ServerStartError and leaves nothing behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from nim_specdec.config import variables as var
from nim_specdec.errors import ServerStartError
from nim_specdec.observe.smoke import http_get
from nim_specdec.processes.child_process import die_with_parent, group_alive, kill_group

POLL_S = 0.5
# Engine processes leave a moment after the API server; this bounds the wait for them.
GROUP_EXIT_S = 20.0


@dataclass(frozen=True)
class ServerSpec:
    env: Mapping[str, str]  # full environment of the child (caller builds it from os.environ + changes)
    args: tuple[str, ...] = ()  # vLLM arguments after `nim-specdec serve`
    port: int | None = None  # None: a free loopback port is chosen (NIM_SERVER_PORT is set from it)
    ready_timeout_s: float = 300.0  # bounded wait for GET ready_path == 200
    log_path: Path | None = None  # server stdout+stderr; a temp file when None
    python: str = sys.executable
    # /health is vLLM's own; /v1/health/ready is the launcher's, which answers 503 while loading.
    ready_path: str = "/health"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningServer:
    """A started server. `stop` is idempotent; what it saw stays readable afterwards."""

    proc: subprocess.Popen
    port: int
    log_path: Path
    ready_statuses: list[int] = field(default_factory=list)  # readiness answers, 0 for refused
    ready_seconds: float = 0.0
    stop_seconds: float = 0.0  # from SIGTERM to the exit of the server process
    killed: bool = False  # SIGKILL was needed: the server ignored SIGTERM for the whole timeout
    group_gone: bool = False  # no process of its group was left once the server had exited

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cmdline(self) -> list[str]:
        """The command line the server process runs now (after the launcher's exec, vLLM's)."""
        try:
            raw = Path(f"/proc/{self.pid}/cmdline").read_bytes()
        except OSError:
            return []
        return raw.decode(errors="replace").split("\0")[:-1]

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def last_log_line(self) -> str:
        lines = [line for line in self.log_text().splitlines() if line.strip()]
        return lines[-1].strip() if lines else "(the server wrote no log)"

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM to the server process alone, as Docker or Kubernetes send it; SIGKILL of the whole
        group if it is still running after timeout_s. Returns the exit code (negative: the signal)."""
        if self.proc.returncode is None:
            started = time.monotonic()
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.killed = True
                kill_group(self.pid)
                self.proc.wait(timeout=30)
            self.stop_seconds = time.monotonic() - started
            end = time.monotonic() + GROUP_EXIT_S
            while group_alive(self.pid) and time.monotonic() < end:
                time.sleep(0.2)
            self.group_gone = not group_alive(self.pid)
        kill_group(self.pid)  # whatever happened, nothing of it outlives this call
        return self.proc.returncode


def _tie_to_parent():
    """SIGKILL when the process that started it dies, so that a killed test run or `tune` never leaves a server
    behind. The kernel ties the child to the *thread* that started it: from a worker thread that ends early,
    the server would be killed with it, so only a start from the main thread is tied."""
    return die_with_parent(signal.SIGKILL) if threading.current_thread() is threading.main_thread() else None


def _command(spec: ServerSpec) -> list[str]:
    host = [] if "--host" in spec.args else ["--host", "127.0.0.1"]
    return [spec.python, "-m", "nim_specdec", "serve", *host, *spec.args]


def start_server(spec: ServerSpec) -> RunningServer:
    port = spec.port if spec.port is not None else free_port()
    env = {**spec.env, var.SERVER_PORT: str(port)}
    if spec.log_path is None:
        handle, name = tempfile.mkstemp(prefix="nim-specdec-server-", suffix=".log")
        os.close(handle)
        log_path = Path(name)
    else:
        log_path = spec.log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            _command(spec),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_tie_to_parent(),
        )
    server = RunningServer(proc, port, log_path)
    started = time.monotonic()
    try:
        problem = _wait_ready(server, spec)
    except BaseException:  # Ctrl-C while waiting: the child goes too
        server.stop(timeout_s=10)
        raise
    if problem:
        server.stop(timeout_s=10)
        raise ServerStartError(
            f"server on port {port}", problem, f"see {log_path}; last log line: {server.last_log_line()}"
        )
    server.ready_seconds = time.monotonic() - started
    return server


def _wait_ready(server: RunningServer, spec: ServerSpec) -> str:
    """'' once ready_path answers 200; otherwise why it never did."""
    end = time.monotonic() + spec.ready_timeout_s
    while True:
        status, _ = http_get(server.url + spec.ready_path, timeout=5.0)
        server.ready_statuses.append(status)
        if status == 200:
            return ""
        if server.proc.poll() is not None:
            return f"exited with code {server.proc.returncode} before it was ready"
        if time.monotonic() > end:
            return f"not ready within {spec.ready_timeout_s:.0f} s (GET {spec.ready_path} answered {sorted(set(server.ready_statuses))})"  # noqa: E501
        time.sleep(POLL_S)


@contextmanager
def running_server(spec: ServerSpec) -> Iterator[RunningServer]:
    server = start_server(spec)
    try:
        yield server
    finally:
        server.stop()
