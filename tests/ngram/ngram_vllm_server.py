"""Start the vLLM OpenAI server through `nim-specdec serve` on a free loopback port, and always stop it.

The n-gram setting travels the way users give it: NIM_SPECDEC_ENABLE=1 with NIM_SPECDEC_ARGS in the
form tune-ngram recommends. The launcher execs vLLM, so the child's pid is the server's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator, Sequence

from nim_specdec.tools.ngram.grid import specdec_args
from nim_specdec.tools.ngram.simulator import NgramParams

START_TIMEOUT_S = 420


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


@contextlib.contextmanager
def vllm_server(model_dir: Path, args: Sequence[str], log_path: Path, ngram: NgramParams | None = None) -> Iterator[str]:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("NIM_")}
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        NIM_MODEL_PATH=str(model_dir),
        NIM_SERVED_MODEL_NAME="tiny",
        NIM_SERVER_PORT=str(port),
        NIM_CACHE_PATH=str(log_path.parent / "nim-cache"),
        NIM_SPECDEC_ENABLE="1" if ngram else "0",
    )
    if ngram:
        env["NIM_SPECDEC_ARGS"] = specdec_args(ngram)
    cmd = [sys.executable, "-m", "nim_specdec", "serve", "--host", "127.0.0.1", *args]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"vLLM exited with {proc.returncode} before it was ready:\n{_log_tail(log_path)}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(base + "/health", timeout=5) as resp:
                    if resp.status == 200:
                        break
            if time.monotonic() > deadline:
                raise RuntimeError(f"vLLM not ready after {START_TIMEOUT_S} s:\n{_log_tail(log_path)}")
            time.sleep(1)
        yield base
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
