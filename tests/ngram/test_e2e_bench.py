"""nim-specdec bench with the real AIPerf against the shared CPU vLLM servers: off (off_run), then on
(ngram_run, the guide's n-gram setting). Each bench step is a probe of that run, into one --out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ngram_traffic import write_capture
from vllm_runs import aiperf_bin, probe

pytestmark = pytest.mark.e2e


def _bench(url: str, mode: str, record, workdir: Path) -> tuple[subprocess.CompletedProcess, Path]:
    capture = workdir / "bench-trace" / "traffic.jsonl"  # the file's stem names the report's category
    if not capture.exists():
        capture.parent.mkdir(exist_ok=True)
        write_capture(capture)
        # AIPerf replays payloads verbatim: keep the chat ones (one endpoint per trace), made greedy so
        # that acceptance does not depend on sampling luck.
        records = [json.loads(line) for line in capture.read_text().splitlines()]
        greedy = [{**r, "payload": {**r["payload"], "temperature": 0}} for r in records if "messages" in r["payload"]]
        capture.write_text("".join(json.dumps(r) + "\n" for r in greedy))
    out = workdir / "bench"
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", "--url", url, "--mode", mode, "--trace", str(capture),
         "--tokenizer", record.env["NIM_MODEL_PATH"], "--aiperf", aiperf_bin(), "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    return done, out


@probe("off")
def bench_off(server, record, workdir):
    return _bench(server.url, "off", record, workdir)


@probe("ngram")
def bench_on(server, record, workdir):
    return _bench(server.url, "on", record, workdir)


def test_bench_compares_on_and_off(off_run, ngram_run):
    off, out = off_run.probe("bench_off")
    assert off.returncode == 0, off.stderr + (out / "runs/off/traffic/aiperf.log").read_text()[-3000:]
    on, _ = ngram_run.probe("bench_on")
    assert on.returncode == 0, on.stderr + (out / "runs/on/traffic/aiperf.log").read_text()[-3000:]
    # The runs take turns in whatever order the session needs them: rebuild the report from both.
    final = subprocess.run([sys.executable, "-m", "nim_specdec", "bench", "--report-only", "--out", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert final.returncode == 0, final.stderr

    rows = json.loads((out / "report.json").read_text())["rows"]
    assert [r["category"] for r in rows] == ["traffic"]
    row = rows[0]
    assert row["tok_s_on"] > 0 and row["tok_s_off"] > 0
    assert row["speedup"] == pytest.approx(row["tok_s_on"] / row["tok_s_off"])
    assert row["drafts"] > 0 and 0 < row["accept_rate"] <= 1 and row["accept_len"] > 1
    assert len(row["accepted_per_pos"]) == 3
    assert "| traffic |" in (out / "report.md").read_text() and "| traffic |" in final.stdout
    for png in ("acceptance_by_position.png", "throughput_on_off.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
