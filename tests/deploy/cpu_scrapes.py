"""Real /v1/metrics scrapes from `nim-specdec serve` running vLLM on the CPU with n-gram speculation.

A probe of the shared ngram run: scripts/smoke.sh (the GPU workflow's smoke check) first, then scrapes
before, between and after two batches of greedy requests of our own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from nim_specdec.observe.smoke import http_get, post_json
from vllm_runs import probe

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


def _traffic(base: str, model: str, prompts: tuple[str, ...]) -> None:
    for prompt in prompts:
        for path, payload in (
            ("/v1/completions", {"prompt": prompt, "max_tokens": 40}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": prompt}], "max_tokens": 32}),
        ):
            status, answer = post_json(base + path, {"model": model, "temperature": 0, **payload})
            assert status == 200, f"POST {path} answered {status}: {answer}"


def _scrape(base: str) -> str:
    status, text = http_get(f"{base}/v1/metrics")
    assert status == 200, f"GET /v1/metrics answered {status}"
    return text


@probe("ngram")
def monitoring_scrapes(server, record, workdir) -> Scrapes:
    base = server.url
    smoke = subprocess.run(
        ["bash", str(SMOKE_SCRIPT), base, "--expect-spec", "--deadline", "60"],
        env={**os.environ, "SMOKE_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=300,
    )
    before = _scrape(base)
    _traffic(base, record.model, FIRST_BATCH)
    first = _scrape(base)
    _traffic(base, record.model, SECOND_BATCH)
    second = _scrape(base)
    return Scrapes(smoke, before, first, second, record.model)
