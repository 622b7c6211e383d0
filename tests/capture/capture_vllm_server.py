"""Start and stop a real vLLM OpenAI server on loopback for the end-to-end capture tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
READY_TIMEOUT_S = 420  # 50-65 s on an idle 2-core machine, several times that when it is shared
MODEL_NAME = "tiny"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def post(url: str, body: dict | bytes, timeout: float = 120.0) -> tuple[int, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()  # a streamed response is read to its end
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@contextlib.contextmanager
def vllm_server(model_dir: Path, log_path: Path, env_extra: dict[str, str], args: list[str]) -> Iterator[tuple[str, subprocess.Popen]]:
    """Yields (base URL, process); SIGTERM then SIGKILL of the whole process group on the way out."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", **env_extra}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--served-model-name", MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", "512", "--max-num-seqs", "8", "--seed", "0",
           "--speculative-config", json.dumps(NGRAM), *args]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"vLLM exited with {proc.returncode} before it was ready; see {log_path}:\n"
                                     + log_path.read_text(errors="replace")[-3000:])
            with contextlib.suppress(OSError):
                if get(f"{base}/health", timeout=2)[0] == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError(f"vLLM not ready after {READY_TIMEOUT_S} s; see {log_path}")
            time.sleep(1)
        yield base, proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen, timeout: float = 60.0) -> int:
    """SIGTERM to the server process only (as Docker and Kubernetes send it to PID 1), then SIGKILL
    of the whole group if the server does not exit in time."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    # Engine processes live in the same group; make sure none outlives the test.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode
