"""`bench --serve` end to end on the CPU demo model with the real AIPerf: an A/A run (speculation off against
itself, from an env file) and an A/B run (off against the guide's n-gram), two rounds each, so eight server
starts in all (each with --enforce-eager: half a start's time, the same for every server).

Two rounds give a wide interval (Student's t with one degree of freedom): what is asserted is what must hold
at any noise, the interval around its speedup and a verdict that follows from it, A/A finding no
difference, the alternating order, and the servers' own counters; bench/bench_serve.py measures the figures.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec_lab.stats import FASTER, NO_DIFFERENCE, SLOWER, verdict
from vllm_runs import GUIDE_NGRAM, GUIDE_NGRAM_ARGS, SERVER_ARGS, aiperf_bin, demo_env

pytestmark = pytest.mark.e2e

PROMPTS = (
    "say cat cat cat again and again",
    "say dog dog dog again and again",
    "say sun sun sun again and again",
    "say sea sea sea again and again",
)
ROUNDS = 2


def _trace(path: Path) -> Path:
    # One request of four samples at temperature 0.8: bench forces greedy and must say so.
    lines = [
        {
            "timestamp": 400 * i,
            "payload": {
                "model": "captured",
                "max_tokens": 200,
                **({"temperature": 0.8} if i == 0 else {}),
                "messages": [{"role": "user", "content": p}],
            },
        }
        for i, p in enumerate(PROMPTS)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _env_file(path: Path, env: dict[str, str], **changes: str) -> Path:
    nim = {k: v for k, v in env.items() if k.startswith("NIM_")}
    path.write_text("# the candidate\n" + "".join(f"{k}={v}\n" for k, v in {**nim, **changes}.items()))
    return path


def _bench(env: dict[str, str], trace: Path, candidate: Path, out: Path) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "nim_specdec",
        "bench",
        "--serve",
        "--trace",
        str(trace),
        "--candidate",
        str(candidate),
        "--rounds",
        str(ROUNDS),
        "--concurrency",
        "2",
        "--request-count",
        "12",
        "--max-tokens",
        "32",
        "--greedy",
        "--ignore-eos",
        "--aiperf",
        aiperf_bin(),
        "--ready-timeout",
        "420",
        "--out",
        str(out),
        "--",
        *SERVER_ARGS,
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def _port_closed(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _check_common(report: dict, stderr: str) -> dict:
    (row,) = report["rows"]
    low, high = row["speedup_interval"]
    assert low <= row["speedup"] <= high and row["rounds"] == ROUNDS
    assert row["verdict"] == verdict(low, high, report["stats"]["margin"]) and row["verdict"] in (
        FASTER,
        SLOWER,
        NO_DIFFERENCE,
    )
    for side in ("baseline", "candidate"):
        assert (
            set(row["rounds_tokens_per_s"][side]) == {"1", "2"} and min(row["rounds_tokens_per_s"][side].values()) > 0
        )
    for side in ("off", "on"):
        assert row[side]["ok_count"] == row[side]["request_count"] == 12
        assert row[side]["output_tokens"] == 12 * 32  # --ignore-eos: every request ran to --max-tokens
        assert row[side]["sampling"] == {"greedy": True, "max_tokens": 32, "ignore_eos": True}
    # Alternating order: baseline first in odd rounds, candidate first in even ones; every server stopped.
    servers = report["serve"]["servers"]
    assert [s["name"] for s in servers] == ["baseline-r1", "candidate-r1", "candidate-r2", "baseline-r2"]
    assert all(_port_closed(s["port"]) for s in servers)
    # Said once: the forced greedy share, the --ignore-eos warning, the answer in one line.
    assert stderr.count("trace: 1 of 4 requests (25%) have temperature > 0") == 1
    assert stderr.count("--ignore-eos generates to max_tokens") == 1
    expected = [line for line in stderr.splitlines() if "expected speedup on traffic" in line]
    assert len(expected) == 1 and row["verdict"] in expected[0]
    # The line prints three decimals of the same figure the row keeps to four: equal within their rounding.
    shown = float(re.search(r": (\d+\.\d{3})x, 95% interval", expected[0]).group(1))
    assert abs(shown - row["speedup"]) <= 0.00051, (shown, row["speedup"])
    assert report["trace_notes_detail"]["traffic"]["shares"]["temperature_above_0"] == 1
    return row


def test_bench_serve_a_a_and_a_b(demo_model, tmp_path):
    env = demo_env(demo_model, tmp_path / "servers", NIM_SPECDEC_ENABLE="1", NIM_SPECDEC_ARGS=GUIDE_NGRAM_ARGS)
    trace = _trace(tmp_path / "traffic.jsonl")

    # A/A: the default baseline (this environment with speculation off) against a file that turns it off too.
    same = _bench(env, trace, _env_file(tmp_path / "off.env", env, NIM_SPECDEC_ENABLE="0"), tmp_path / "aa")
    report = json.loads((tmp_path / "aa" / "report.json").read_text())
    row = _check_common(report, same.stderr)
    assert row["verdict"] == NO_DIFFERENCE, row
    assert row["off"]["spec"] is None and row["on"]["spec"] is None
    assert report["serve"]["per_request_spec_decode_metrics"] == {"baseline": False, "candidate": False}

    # A/B: the guide's n-gram from a file, against the same baseline.
    ab = _bench(env, trace, _env_file(tmp_path / "ngram.env", env), tmp_path / "ab")
    report = json.loads((tmp_path / "ab" / "report.json").read_text())
    row = _check_common(report, ab.stderr)
    assert row["on"]["server_spec_config"]["speculative_config"] == GUIDE_NGRAM
    assert row["on"]["acceptance"]["acceptance_length"] > 1 and row["off"]["spec"] is None
    assert row["tpot_ratio"] > 1, row  # the server's time per output token falls with accepted drafts
    assert report["serve"]["per_request_spec_decode_metrics"] == {"baseline": False, "candidate": True}
    log = (tmp_path / "ab" / "logs" / "candidate-r1.log").read_text()
    assert "per-request-spec-decode-metrics" in log or "per_request_spec_decode_metrics" in log
    md = (tmp_path / "ab" / "report.md").read_text()
    assert "## Speedup" in md and "95% interval" in md and md in ab.stdout
    assert (tmp_path / "ab" / "speedup_interval.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The report rebuilds from OUT alone.
    rebuilt = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", "--report-only", "--out", str(tmp_path / "ab")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        rebuilt.returncode == 0
        and json.loads((tmp_path / "ab" / "report.json").read_text())["rows"][0]["speedup"] == row["speedup"]
    )
