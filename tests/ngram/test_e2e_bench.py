"""nim-specdec bench with the real AIPerf against the CPU vLLM server, off then on (one server at a time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec.tools.ngram.simulator import NgramParams
from ngram_traffic import MAX_MODEL_LEN, write_capture
from ngram_vllm_server import vllm_server

pytestmark = pytest.mark.e2e


def _aiperf() -> str:
    # AIPerf lives in its own virtualenv (`make aiperf-venv`); AIPERF_BIN points elsewhere.
    path = Path(os.environ.get("AIPERF_BIN") or Path(__file__).resolve().parents[2] / ".venv-aiperf" / "bin" / "aiperf")
    if not os.access(path, os.X_OK):
        pytest.fail(f"aiperf not found at {path}: run `make aiperf-venv` or set AIPERF_BIN")
    return str(path)


def _bench(url, mode, capture, model_dir, out):
    aiperf = _aiperf()
    return subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", "--url", url, "--mode", mode, "--trace", str(capture),
         "--tokenizer", str(model_dir), "--aiperf", aiperf, "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )


def test_bench_compares_on_and_off(tiny_model_dir, tmp_path):
    capture = write_capture(tmp_path / "traffic.jsonl")
    # AIPerf replays payloads verbatim: keep the chat ones (one endpoint per trace), made greedy so
    # that acceptance does not depend on sampling luck.
    records = [json.loads(line) for line in capture.read_text().splitlines()]
    greedy = [{**r, "payload": {**r["payload"], "temperature": 0}} for r in records if "messages" in r["payload"]]
    capture.write_text("".join(json.dumps(r) + "\n" for r in greedy))
    out = tmp_path / "bench"
    args = ["--max-model-len", str(MAX_MODEL_LEN)]
    with vllm_server(tiny_model_dir, args, tmp_path / "off.log") as url:
        off = _bench(url, "off", capture, tiny_model_dir, out)
    assert off.returncode == 0, off.stderr + (out / "runs/off/traffic/aiperf.log").read_text()[-3000:]
    with vllm_server(tiny_model_dir, args, tmp_path / "on.log", ngram=NgramParams(3, 1, 4)) as url:
        on = _bench(url, "on", capture, tiny_model_dir, out)
    assert on.returncode == 0, on.stderr + (out / "runs/on/traffic/aiperf.log").read_text()[-3000:]

    rows = json.loads((out / "report.json").read_text())["rows"]
    assert [r["category"] for r in rows] == ["traffic"]
    row = rows[0]
    assert row["tok_s_on"] > 0 and row["tok_s_off"] > 0
    assert row["speedup"] == pytest.approx(row["tok_s_on"] / row["tok_s_off"])
    assert row["drafts"] > 0 and 0 < row["accept_rate"] <= 1 and row["accept_len"] > 1
    assert len(row["accepted_per_pos"]) == 3
    assert "| traffic |" in (out / "report.md").read_text() and "| traffic |" in on.stdout
    for png in ("acceptance_by_position.png", "throughput_on_off.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
