"""bench and the replay engine against real vLLM servers (demo model, speculation off then n-gram on, one
server at a time) with the real AIPerf.

The capture's requests are spread out in time. Replayed at those times, output tokens/s would measure the
arrival rate and the speedup would read about 1.0; bench's closed loop must instead agree with a closed-loop
measurement taken here through the engine directly.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nim_specdec.tools.ngram.simulator import NgramParams
from nim_specdec.tools.replay import ReplaySpec, run_replay
from bench_servers import SERVED_NAME, demo_server

pytestmark = pytest.mark.e2e

# The demo model answers these with visible text from its first tokens on (prompts that make it emit
# special tokens stream empty chunks, which moves the first visible token to the end).
# Twelve requests of 64 tokens: each run lasts seconds, enough to average out a busy CI machine.
WORDS = ("cat", "dog", "sun", "tree", "sea", "sky", "red", "blue", "one", "two", "hat", "cup")
PROMPTS = tuple(f"say {w} {w} {w} again and again" for w in WORDS)
SPREAD_MS = 2000
MAX_TOKENS = 64


def _capture(path):
    lines = [{"timestamp": SPREAD_MS * i, "payload": {"model": "captured", "max_tokens": 200, "messages": [{"role": "user", "content": p}]}}
             for i, p in enumerate(PROMPTS)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _closed_loop(url, target, aiperf, out, lines):
    spec = ReplaySpec(url=url, model=SERVED_NAME, requests=tuple({"messages": [{"role": "user", "content": p}]} for p in PROMPTS),
                      concurrency=1, greedy=True, max_tokens=MAX_TOKENS, ignore_eos=True, tokenizer=str(target))
    return run_replay(spec, out, aiperf, progress=lines.append)


def _bench(url, mode, capture, target, aiperf, out):
    cmd = [sys.executable, "-m", "nim_specdec", "bench", "--url", url, "--mode", mode, "--trace", str(capture),
           "--greedy", "--ignore-eos", "--max-tokens", str(MAX_TOKENS), "--tokenizer", str(target), "--aiperf", str(aiperf),
           "--out", str(out), "--extra", "--random-seed", "--extra=7"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_bench_speedup_matches_a_closed_loop_measurement(demo_target, aiperf_bin, tmp_path):
    capture = _capture(tmp_path / "traffic.jsonl")
    out = tmp_path / "bench"
    lines: list[str] = []
    # Each bench run sits between two closed-loop measurements of the same server: their mean is the
    # reference, so that a machine getting busier or quieter during the phase does not bias it.
    with demo_server(demo_target, tmp_path / "off.log") as url:
        off = _closed_loop(url, demo_target, aiperf_bin, tmp_path / "direct-off", lines)
        bench_off = _bench(url, "off", capture, demo_target, aiperf_bin, out)
        off_after = _closed_loop(url, demo_target, aiperf_bin, tmp_path / "direct-off-after", [])
    # Capture on too: the launcher's endpoints and capture reach vLLM as one --middleware.
    with demo_server(demo_target, tmp_path / "on.log", ngram=NgramParams(3, 1, 4), capture=tmp_path / "captured.jsonl") as url:
        on = _closed_loop(url, demo_target, aiperf_bin, tmp_path / "direct-on", lines)
        bench_on = _bench(url, "on", capture, demo_target, aiperf_bin, out)
        on_after = _closed_loop(url, demo_target, aiperf_bin, tmp_path / "direct-on-after", [])

    # The engine: streamed, tokens as the server counted them, the server's own counters and config.
    for got in (off, on):
        assert (got.request_count, got.ok_count, got.concurrency, got.schedule) == (len(PROMPTS), len(PROMPTS), 1, "closed")
        assert got.output_tokens == len(PROMPTS) * MAX_TOKENS  # ignore_eos: every request ran to max_tokens
        assert got.output_tokens_per_s == pytest.approx(got.output_tokens / got.duration_s)
        assert 0 < got.ttft_s["p50"] < got.latency_s["p50"] and got.itl_s["p50"] >= 0
    # Without speculation every streamed chunk carries one token, so the gaps between them are measured.
    # With n-gram accepting whole drafts on a quiet machine, AIPerf has reported an ITL p50 of 0.
    assert off.itl_s["p50"] > 0
    assert off.spec is None and off.server_spec_config["speculative_config"] is None
    assert on.spec is not None and 0 < on.spec.accepted <= on.spec.draft_tokens and len(on.spec.per_position) == 3
    assert on.server_spec_config["speculative_config"] == {"method": "ngram", "num_speculative_tokens": 3,
                                                           "prompt_lookup_max": 4, "prompt_lookup_min": 1}
    assert lines[0].startswith("replay: warming up") and lines[-1].startswith("replay: done")

    # bench: closed loop by default, so its speedup is the server's, not the capture's arrival rate.
    closed_speedup = (on.output_tokens_per_s + on_after.output_tokens_per_s) / (off.output_tokens_per_s + off_after.output_tokens_per_s)
    report = json.loads((out / "report.json").read_text())
    (row,) = report["rows"]
    assert row["category"] == "traffic" and row["on"]["schedule"] == "closed" and row["off"]["request_count"] == len(PROMPTS)
    # Within 25%; on a machine busy enough that the two closed-loop estimates (before and after the bench
    # runs) differ by more than that, within their own spread: a check cannot be finer than the noise.
    before, after = on.output_tokens_per_s / off.output_tokens_per_s, on_after.output_tokens_per_s / off_after.output_tokens_per_s
    tolerance = max(0.25, abs(before - after) / ((before + after) / 2))
    figures = {"bench off/on": (row["off"]["output_tokens_per_s"], row["on"]["output_tokens_per_s"]),
               "closed loop off/off-after/on/on-after": (off.output_tokens_per_s, off_after.output_tokens_per_s,
                                                          on.output_tokens_per_s, on_after.output_tokens_per_s)}
    assert row["speedup"] == pytest.approx(closed_speedup, rel=tolerance), (row["speedup"], closed_speedup, tolerance, figures)
    assert row["on"]["acceptance"]["acceptance_length"] > 1 and len(row["on"]["acceptance"]["per_position_rate"]) == 3
    assert row["off"]["server_spec_config"]["speculative_config"] is None
    assert row["on"]["server_spec_config"]["speculative_config"]["method"] == "ngram"
    md = (out / "report.md").read_text()
    for heading in ("## Throughput", "## Latency", "## Acceptance", "## What each server ran"):
        assert heading in md
    assert md in bench_on.stdout and "closed loop, 1 in flight" in md
    assert "nim-specdec bench: replay: done" in bench_off.stderr and "nim-specdec bench: report:" in bench_on.stderr
    assert "Found duplicate keys" not in (tmp_path / "on.log").read_text()
    assert len((tmp_path / "captured.jsonl").read_text().splitlines()) >= 2 * len(PROMPTS)
    for png in ("throughput_on_off.png", "latency_on_off.png", "acceptance_by_position.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
