"""Start `nim-specdec serve` as a real process, wait for it, stop it with SIGTERM, and keep what happened.

Every wait is bounded; every failure message carries the tail of the server's log.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from nim_specdec.observe.smoke import wait_ready

READY_DEADLINE_S = float(os.environ.get("E2E_READY_DEADLINE_S", "420"))
STOP_DEADLINE_S = 60.0
LOG_TAIL_CHARS = 6000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


@dataclass
class StopRecord:
    pid: int
    cmdline_before: list[str]
    returncode: int | None
    seconds: float
    group_gone: bool
    killed: bool


@dataclass
class LauncherServer:
    name: str
    env: dict
    args: list[str]
    log_path: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    ready_statuses: list[int] = field(default_factory=list)
    ready_seconds: float = 0.0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return text[-LOG_TAIL_CHARS:]

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def fail(self, message: str) -> AssertionError:
        return AssertionError(f"[{self.name}] {message}\n--- server log (tail) ---\n{self.log_tail()}")

    def start(self) -> None:
        env = {**self.env, "NIM_SERVER_PORT": str(self.port)}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            # A session of its own: the process group holds vLLM and its engine processes, so teardown
            # can make sure nothing outlives the test, whatever happened.
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "nim_specdec", "serve", "--host", "127.0.0.1", *self.args],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        started = time.monotonic()
        try:
            self.ready_statuses = wait_ready(self.base, READY_DEADLINE_S, poll_s=0.5, alive=lambda: self.proc.poll() is None)
        except (TimeoutError, RuntimeError) as err:
            code = self.proc.poll()
            self.kill()
            raise self.fail(f"not ready: {err} (launcher exit code {code})") from None
        self.ready_seconds = time.monotonic() - started

    def stop(self) -> StopRecord:
        """SIGTERM to the pid the launcher was started as, as Docker or Kubernetes would send it."""
        assert self.proc is not None
        pid = self.proc.pid
        before = cmdline(pid)
        started = time.monotonic()
        killed = False
        try:
            os.kill(pid, signal.SIGTERM)
            code = self.proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            code, killed = None, True
        except ProcessLookupError:
            code = self.proc.poll()
        seconds = time.monotonic() - started
        end = time.monotonic() + 20
        while group_alive(pid) and time.monotonic() < end:  # engine processes leave just after the server
            time.sleep(0.2)
        gone = not group_alive(pid)
        self.kill()
        return StopRecord(pid, before, code, seconds, gone, killed)

    def kill(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
