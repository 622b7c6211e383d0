"""Real /v1/metrics scrapes from `nim-specdec serve` running vLLM on the CPU with n-gram speculation.

One server: started, checked with scripts/smoke.sh (the GPU workflow's smoke check), then scraped
before, between and after two batches of greedy requests of our own, then stopped with SIGTERM
(SIGKILL after a bounded wait). Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
READY_DEADLINE_S = float(os.environ.get("E2E_READY_DEADLINE_S", "420"))
FIRST_BATCH = ("one two three one two three one two", "The quick brown fox jumps over the lazy dog")
SECOND_BATCH = ("abc abc abc abc abc", "hello world hello world")


SMOKE_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "smoke.sh"


@dataclass(frozen=True)
class Scrapes:
    smoke: subprocess.CompletedProcess  # scripts/smoke.sh URL --expect-spec, run first
    before: str  # after the smoke check, before our own traffic
    first: str  # after the first batch
    second: str  # after the second batch
    model: str


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""
    except (urllib.error.URLError, OSError):
        return 0, ""


def _post(url: str, payload: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def _traffic(base: str, model: str, prompts: tuple[str, ...]) -> None:
    for prompt in prompts:
        _post(f"{base}/v1/completions", {"model": model, "prompt": prompt, "max_tokens": 40, "temperature": 0})
        _post(
            f"{base}/v1/chat/completions",
            {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 32, "temperature": 0},
        )


def _scrape(base: str) -> str:
    status, text = _get(f"{base}/v1/metrics")
    assert status == 200, f"GET /v1/metrics answered {status}"
    return text


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def capture(workdir: Path, model_dir: Path) -> Scrapes:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIM_")}
    env.update(
        HF_HUB_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        NIM_MODEL_PATH=str(model_dir),
        NIM_SERVER_PORT=str(port),
        NIM_CACHE_PATH=str(workdir / "cache"),
        NIM_WORKSPACE=str(workdir / "workspace"),
    )
    log_path = workdir / "server.log"
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "nim_specdec", "serve", "--speculative-config", json.dumps(NGRAM)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while _get(f"{base}/v1/health/ready")[0] != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace")[-4000:]
                raise AssertionError(f"server not ready (exit {proc.poll()}) within {READY_DEADLINE_S:.0f} s:\n{tail}")
            time.sleep(1)
        model = json.loads(_get(f"{base}/v1/models")[1])["data"][0]["id"]
        smoke = subprocess.run(
            ["bash", str(SMOKE_SCRIPT), base, "--expect-spec", "--deadline", "60"],
            env={**os.environ, "SMOKE_PYTHON": sys.executable}, capture_output=True, text=True, timeout=300,
        )
        before = _scrape(base)
        _traffic(base, model, FIRST_BATCH)
        first = _scrape(base)
        _traffic(base, model, SECOND_BATCH)
        second = _scrape(base)
        return Scrapes(smoke, before, first, second, model)
    finally:
        _stop(proc)
