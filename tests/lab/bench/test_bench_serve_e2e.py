"""`bench --serve` end to end on the CPU demo model with the real AIPerf, in one run that starts four servers:
speculation off and the guide's n-gram, two rounds each in rotated order, over a SPEED-Bench-shaped input made
here (three categories of unequal size, in one run per server). The sides come from env files as a new user
writes them: each names only its NIM_SPECDEC_* variables, and the model comes from the environment.

What is asserted is what a correct bench satisfies on any machine: each interval and MDE are the documented
ones of its own rounds and the verdict follows from them; the n-gram verdict is never `slower` (n-gram is
about 1.5x faster on the demo model: a two-round run reads `slower` in 0.3% of runs even at log sd 0.5 per
round, simulated). A/A runs are not served here: their verdict rates are a matter of many runs, which
tests/lab/bench/test_bench_noise_worlds.py simulates over 1000 worlds of a model of the machine. The acceptance
matrix comes from every response of the n-gram candidate, by category, and adds up to the server's own
counters exactly.
"""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import stats_reference as ref
from nim_specdec_lab import stats
from vllm_runs import GUIDE_NGRAM, GUIDE_NGRAM_ARGS, SERVER_ARGS, aiperf_bin, demo_env

pytestmark = pytest.mark.e2e

WORDS = {"coding": ("cat", "dog"), "math": ("sun", "sea", "sky"), "writing": ("red", "blue", "one", "two")}
REQUESTS = sum(len(w) for w in WORDS.values())
ROUNDS, MAX_TOKENS = 2, 32
API_KEY = "bench-e2e-key-9f2"


def _speed_bench(directory: Path) -> Path:
    """qualitative.jsonl as SPEED-Bench's prepare.py writes it: a category and chat messages per row. One row
    has two turns (bench replays its first), one belongs to a category not asked for."""
    rows = []
    for category, words in WORDS.items():
        for w in words:
            rows.append({"question_id": f"{category}-{w}", "category": category, "messages": []})
            rows[-1]["messages"].append({"role": "user", "content": f"say {w} {w} {w} again and again"})
    rows[0]["messages"] += [{"role": "assistant", "content": "cat"}, {"role": "user", "content": "and dog?"}]
    rows.append({"question_id": "qa-hat", "category": "qa", "messages": [{"role": "user", "content": "say hat"}]})
    directory.mkdir()
    (directory / "qualitative.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


def _env_file(path: Path, **variables: str) -> Path:
    """An env file that names only what its side differs in, as a new user writes it."""
    path.write_text("# a side\n" + "".join(f"{k}={v}\n" for k, v in variables.items()))
    return path


def _bench(env: dict[str, str], data: Path, baseline: Path, candidate: Path, out: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "nim_specdec", "bench", "--serve", "--speed-bench", str(data)]
    command += ["--categories", ",".join(WORDS), "--baseline", str(baseline), "--candidate", str(candidate)]
    command += ["--rounds", str(ROUNDS), "--concurrency", "2", "--max-tokens", str(MAX_TOKENS), "--greedy"]
    command += ["--ignore-eos", "--aiperf", aiperf_bin(), "--ready-timeout", "420", "--out", str(out), "--"]
    done = subprocess.run([*command, *SERVER_ARGS], env=env, capture_output=True, text=True, timeout=2400)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def _port_closed(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _check_row(row: dict, margin: float) -> None:
    """What holds for every comparison: the interval is the t-interval of its own paired rounds (the per-round
    figures in the row are rounded to 3 decimals), the MDE is the 80%-power effect at their spread, the
    verdict follows from the interval, the runs are complete."""
    rounds = row["rounds_tokens_per_s"]
    assert set(rounds["baseline"]) == set(rounds["candidate"]) == {"1", "2"} and row["rounds"] == ROUNDS
    pairs = [(rounds["baseline"][n], rounds["candidate"][n]) for n in ("1", "2")]
    logs = [math.log(c / b) for b, c in pairs]
    spread = abs(logs[0] - logs[1]) / math.sqrt(2)  # the sample sd of two values
    half = 12.706 * spread / math.sqrt(2)
    low, high = row["speedup_interval"]
    assert row["speedup"] == pytest.approx(math.exp(sum(logs) / 2), rel=1e-3)
    # (The report rounds to 4 decimals: a low end near 0 keeps little relative precision.)
    expected = (math.exp(sum(logs) / 2 - half), math.exp(sum(logs) / 2 + half))
    assert (low, high) == pytest.approx(expected, rel=1e-3, abs=1e-4)
    mde = row["mde"]  # at the spread's 90% upper bound (scipy.stats reference); None past a double's range
    if mde is not None:
        assert (mde["faster"], mde["slower"]) == pytest.approx(ref.mde(spread, 2, margin), rel=1e-3, abs=1e-4)
    assert row["verdict"] == stats.verdict(low, high, margin)
    for side in ("off", "on"):
        assert row[side]["ok_count"] == row[side]["request_count"] == REQUESTS
        assert row[side]["output_tokens"] == REQUESTS * MAX_TOKENS  # --ignore-eos: all ran to --max-tokens
        assert row[side]["sampling"] == {"greedy": True, "max_tokens": MAX_TOKENS, "ignore_eos": True}


def test_bench_serve_with_env_files_and_the_acceptance_matrix(demo_model, tmp_path):
    # The environment names the model (and, to show it stays out, a speculation of its own); each side's file
    # names only its NIM_SPECDEC_* variables.
    env = demo_env(demo_model, tmp_path / "servers", NIM_SPECDEC_ENABLE="1", NIM_SPECDEC_ARGS=GUIDE_NGRAM_ARGS)
    data = _speed_bench(tmp_path / "speed-bench")
    off = _env_file(tmp_path / "off.env", NIM_SPECDEC_ENABLE="0")
    # The candidate's file is the production one: it carries the server's API key, which bench's servers go
    # without (AIPerf could carry it only on its command line); had it reached them, every request was a 401.
    ngram = _env_file(
        tmp_path / "ngram.env", NIM_SPECDEC_ENABLE="1", NIM_SPECDEC_ARGS=GUIDE_NGRAM_ARGS, VLLM_API_KEY=API_KEY
    )
    out = tmp_path / "out"
    done = _bench(env, data, off, ngram, out)
    assert "VLLM_API_KEY is left out of the servers bench --serve starts" in done.stderr
    logs = sorted((out / "logs").glob("*.log"))
    assert len(logs) == 2 * ROUNDS and all(API_KEY not in log.read_text() for log in logs)
    assert API_KEY not in done.stderr
    report = json.loads((out / "report.json").read_text())
    margin = report["stats"]["margin"]
    (a_b,) = report["rows"]
    assert a_b["category"] == "speed-bench" and a_b["candidate"] == "candidate"
    _check_row(a_b, margin)

    # Rotated order over the two sides (they alternate), recorded in the report; every server stopped.
    servers = report["serve"]["servers"]
    assert [s["name"] for s in servers] == ["baseline-r1", "candidate-r1", "candidate-r2", "baseline-r2"]
    assert report["serve"]["order_by_round"] == {"1": ["baseline", "candidate"], "2": ["candidate", "baseline"]}
    assert "rotated" in report["stats"]["order"]
    assert all(_port_closed(s["port"]) for s in servers)
    assert report["serve"]["sides"] == {"baseline": str(off), "candidate": str(ngram)}

    # The guide's n-gram against speculation off: the model from the environment on both sides, speculation
    # from each side's file only.
    assert a_b["verdict"] != stats.SLOWER, a_b
    assert a_b["on"]["server_spec_config"]["speculative_config"] == GUIDE_NGRAM and a_b["off"]["spec"] is None
    assert a_b["off"]["server_spec_config"]["speculative_config"] is None
    assert a_b["on"]["acceptance"]["acceptance_length"] > 1
    # (That every server started at all shows the model came from the environment: a file that replaced the
    # environment's NIM_* stopped the first server with "no model to serve".)
    # Its time per output token, as the report puts it; whether it fell is bench_serve.py's to measure (runs
    # of 9 short requests here last under a second, and one busy moment of the machine can double a mean).
    off_tpot, on_tpot = a_b["off"]["server_means"]["tpot_mean_s"], a_b["on"]["server_means"]["tpot_mean_s"]
    assert a_b["tpot_ratio"] == pytest.approx(off_tpot / on_tpot) and on_tpot > 0
    flags = report["serve"]["per_request_spec_decode_metrics"]
    assert flags == {"baseline": False, "candidate": True}
    assert "per-request-spec-decode-metrics" in (out / "logs" / "candidate-r1.log").read_text()

    # Said once: what the input holds that is not measured, the --ignore-eos warning, one answer per candidate.
    stderr = done.stderr
    assert stderr.count(f"trace: {REQUESTS} of {REQUESTS} requests (100%) set no temperature") == 1
    assert stderr.count("speed-bench: coding: 1 multi-turn rows replayed as their first turn") == 1
    assert stderr.count("--ignore-eos generates to max_tokens") == 1
    expected = [line for line in stderr.splitlines() if "expected speedup" in line]
    assert len(expected) == 1 and "on speed-bench" in expected[0] and a_b["verdict"] in expected[0]
    shown = float(re.search(r": (\d+\.\d{3})x, 95% interval", expected[0]).group(1))
    assert abs(shown - a_b["speedup"]) <= 0.00051, (shown, a_b["speedup"])

    # The acceptance matrix: the n-gram candidate's every response, by its request's category, in one run per
    # server; the counts add up to what its servers' counters grew by, run by run summed.
    matrix = report["acceptance_matrix"]
    assert matrix["columns"] == [*WORDS, "Overall"] and list(matrix["acceptance_length"]) == ["candidate"]
    counts = matrix["counts"]["candidate"]
    assert {c: (v["prompts"], v["responses"]) for c, v in counts.items()} == {
        c: (len(w), ROUNDS * len(w)) for c, w in WORDS.items()
    }
    runs = [json.loads(p.read_text()) for p in sorted(out.glob("serve/r*/candidate/c2/speed-bench/measurement.json"))]
    assert len(runs) == ROUNDS
    for key, counter in (("steps", "drafts"), ("draft_tokens", "draft_tokens"), ("accepted", "accepted")):
        assert sum(v[key] for v in counts.values()) == sum(r["spec"][counter] for r in runs), key
    for metric in ("acceptance_length", "acceptance_rate"):
        cells = matrix[metric]["candidate"]
        for cell in cells.values():
            assert cell["interval"][0] <= cell["value"] <= cell["interval"][1]
        mean = sum(cells[c]["value"] for c in WORDS) / len(WORDS)
        assert math.isclose(cells["Overall"]["value"], mean, abs_tol=2e-4)  # AIPerf's Overall: the row's mean
    assert not [w for w in report["warnings"] if "covers" in w or "per-request" in w], report["warnings"]

    md = (out / "report.md").read_text()
    assert "## Speedup" in md and "95% interval" in md and md in done.stdout
    assert "## Acceptance by category" in md and "| configuration | coding | math | writing | Overall |" in md
    for png in ("speedup_interval.png", "acceptance_by_category.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The report rebuilds from OUT alone.
    rebuilt = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", "--report-only", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    again = json.loads((out / "report.json").read_text())
    assert [r["speedup"] for r in again["rows"]] == [r["speedup"] for r in report["rows"]]
    assert again["acceptance_matrix"] == matrix
