"""The server starter on real child processes that stand in for vLLM at the process level: one that
answers /health, one that exits at once, one that never answers and ignores SIGTERM. The full path
through `nim-specdec serve` and vLLM is what every end-to-end test runs."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nim_specdec.errors import EXIT_MATERIALIZE, ServerStartError
from nim_specdec_lab.server_process import RunningServer, ServerSpec, running_server, start_server

# Each script is run as `SCRIPT -m nim_specdec serve --host 127.0.0.1 ARGS...` (it stands in for python).
ANSWERS_HEALTH = f"""#!{sys.executable}
import http.server, os, signal, sys
print("args", sys.argv[1:], flush=True)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404); self.end_headers()
    def log_message(self, *a): pass
server = http.server.HTTPServer(("127.0.0.1", int(os.environ["NIM_SERVER_PORT"])), H)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
print("serving", flush=True)
server.serve_forever()
"""
EXITS = f"""#!{sys.executable}
import sys
print("nim-specdec: error: NIM_MODEL_PATH: is not set", flush=True)
sys.exit(2)
"""
HANGS = f"""#!{sys.executable}
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("loading forever", flush=True)
time.sleep(600)
"""


def script(tmp_path: Path, text: str) -> str:
    path = tmp_path / "fake-python"
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def running(command: str) -> list[int]:
    """Pids of the processes whose command line holds `command`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and command.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:  # it exited while we looked
            pass
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_ready_server_is_stopped_with_sigterm(tmp_path):
    spec = ServerSpec(
        env=dict(os.environ),
        args=("--max-model-len", "64"),
        python=script(tmp_path, ANSWERS_HEALTH),
        log_path=tmp_path / "logs" / "server.log",
    )
    with running_server(spec) as server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.ready_statuses[-1] == 200
        assert "'serve', '--host', '127.0.0.1', '--max-model-len', '64'" in server.log_text()
        pid = server.pid
    assert server.proc.returncode == 0 and not server.killed and server.group_gone
    assert not alive(pid)
    assert server.stop() == 0  # idempotent


def test_early_exit_raises_with_the_last_log_line(tmp_path):
    spec = ServerSpec(env=dict(os.environ), python=script(tmp_path, EXITS), ready_timeout_s=60)
    with pytest.raises(ServerStartError) as caught:
        start_server(spec)
    assert caught.value.exit_code == EXIT_MATERIALIZE
    message = caught.value.one_line()
    assert "exited with code 2" in message
    assert message.endswith("nim-specdec: error: NIM_MODEL_PATH: is not set")


def test_not_ready_in_time_leaves_nothing_running(tmp_path):
    spec = ServerSpec(
        env=dict(os.environ), python=script(tmp_path, HANGS), ready_timeout_s=1.5, log_path=tmp_path / "hang.log"
    )
    started = time.monotonic()
    with pytest.raises(ServerStartError) as caught:
        start_server(spec)
    assert "not ready within 2 s" in str(caught.value) and str(caught.value).endswith("loading forever")
    assert time.monotonic() - started < 40  # 1.5 s wait + 10 s for SIGTERM, then SIGKILL
    assert running(str(tmp_path / "fake-python")) == []


def test_stop_kills_a_server_that_ignores_sigterm(tmp_path):
    # Started by hand, not through start_server, which would refuse a server that never gets ready.
    proc = subprocess.Popen([script(tmp_path, HANGS)], start_new_session=True, stdout=subprocess.PIPE, text=True)
    server = RunningServer(proc, 1, tmp_path / "none.log")
    assert proc.stdout.readline().strip() == "loading forever"  # its SIGTERM handler is in place
    assert server.stop(timeout_s=1) == -9
    assert server.killed and not alive(proc.pid)


def test_server_dies_with_the_process_that_started_it(tmp_path):
    # A parent that starts a server and is then killed outright (a test run stopped by `timeout -s KILL`).
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import os, sys
from nim_specdec_lab.server_process import ServerSpec, start_server
server = start_server(ServerSpec(env=dict(os.environ), python={script(tmp_path, ANSWERS_HEALTH)!r}))
print(server.pid, flush=True)
import time; time.sleep(600)
""",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    child = int(parent.stdout.readline())
    assert alive(child)
    parent.kill()
    parent.wait(30)
    end = time.monotonic() + 10
    while alive(child) and time.monotonic() < end:
        time.sleep(0.1)
    assert not alive(child)
