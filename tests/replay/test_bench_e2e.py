"""bench and the replay engine against the shared vLLM runs (the demo model with speculation off, then the
guide's n-gram) with the real AIPerf.

The capture's requests are spread out in time. Replayed at those times, output tokens/s would measure the
arrival rate and the speedup would read about 1.0; bench's closed loop must instead agree with a closed-loop
measurement taken here through the engine directly. Each server gets one probe: a closed-loop measurement,
the bench run, and the closed-loop measurement again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nim_specdec_lab.replay import ReplaySpec, run_replay
from nim_specdec_lab.replay.spec import ReplayMeasurement
from vllm_runs import GUIDE_NGRAM, SERVED_NAME, aiperf_bin, probe

pytestmark = pytest.mark.e2e

# The demo model answers these with visible text from its first tokens on (prompts that make it emit
# special tokens stream empty chunks, which moves the first visible token to the end).
WORDS = ("cat", "dog", "sun", "tree", "sea", "sky", "red", "blue", "one", "two", "hat", "cup")
PROMPTS = tuple(f"say {w} {w} {w} again and again" for w in WORDS)
SPREAD_MS = 2000
MAX_TOKENS = 128
# Each prompt three times: a run lasts seconds even with speculation on, so that one slow request (a
# busy 2-core machine has them) moves the figure by a few percent, not by half.
REQUESTS = 3 * len(PROMPTS)
BENCH_DIR = "bench-e2e"


def _capture(path: Path) -> Path:
    lines = [
        {
            "timestamp": SPREAD_MS * i,
            "payload": {"model": "captured", "max_tokens": 200, "messages": [{"role": "user", "content": p}]},
        }
        for i, p in enumerate(PROMPTS)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _closed_loop(url: str, tokenizer: str, out: Path, lines: list[str]) -> ReplayMeasurement:
    spec = ReplaySpec(
        url=url,
        model=SERVED_NAME,
        requests=tuple({"messages": [{"role": "user", "content": p}]} for p in PROMPTS),
        concurrency=1,
        request_count=REQUESTS,
        greedy=True,
        max_tokens=MAX_TOKENS,
        ignore_eos=True,
        tokenizer=tokenizer,
    )
    return run_replay(spec, out, Path(aiperf_bin()), progress=lines.append)


def _bench(*options: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", *options], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _phase(mode: str, url: str, tokenizer: str, workdir: Path) -> dict:
    """closed loop, bench --mode MODE, closed loop again, on one server."""
    root = workdir / BENCH_DIR
    root.mkdir(exist_ok=True)
    capture = _capture(root / "traffic.jsonl")
    lines: list[str] = []
    before = _closed_loop(url, tokenizer, root / f"direct-{mode}", lines)
    bench = _bench(
        "--url",
        url,
        "--mode",
        mode,
        "--trace",
        str(capture),
        "--greedy",
        "--ignore-eos",
        "--max-tokens",
        str(MAX_TOKENS),
        "--request-count",
        str(REQUESTS),
        "--tokenizer",
        tokenizer,
        "--aiperf",
        aiperf_bin(),
        "--out",
        str(root / "bench"),
        "--extra",
        "--random-seed",
        "--extra=7",
    )
    after = _closed_loop(url, tokenizer, root / f"direct-{mode}-after", [])
    return {"before": before, "after": after, "lines": lines, "stderr": bench.stderr}


@probe("off")
def bench_off(server, record, workdir):
    return _phase("off", server.url, record.env["NIM_MODEL_PATH"], workdir)


@probe("ngram")
def bench_on(server, record, workdir):
    return _phase("on", server.url, record.env["NIM_MODEL_PATH"], workdir)


def test_bench_speedup_matches_a_closed_loop_measurement(off_run, ngram_run, runs_dir):
    off_phase, on_phase = off_run.probe("bench_off"), ngram_run.probe("bench_on")
    off, off_after, on, on_after = off_phase["before"], off_phase["after"], on_phase["before"], on_phase["after"]

    # The engine: streamed, tokens as the server counted them, the server's own counters, timings and config.
    for got in (off, on):
        assert (got.request_count, got.ok_count, got.concurrency, got.schedule) == (REQUESTS, REQUESTS, 1, "closed")
        assert got.output_tokens == REQUESTS * MAX_TOKENS  # ignore_eos: every request ran to max_tokens
        assert got.output_tokens_per_s == pytest.approx(got.output_tokens / got.duration_s)
        assert 0 < got.ttft_s["p50"] <= got.latency_s["p50"] and got.itl_s["p50"] >= 0
        means = got.server_means
        assert means["requests"] == REQUESTS and 0 < means["ttft_mean_s"] < means["latency_mean_s"]
        # TPOT is decode time / (tokens - 1): below the whole latency / tokens' share once prefill is out.
        assert 0 < means["tpot_mean_s"] * (MAX_TOKENS - 1) <= means["latency_mean_s"]
        assert 0 < got.client_busy_share <= 1
    assert off.spec is None and off.server_spec_config["speculative_config"] is None
    assert on.spec is not None and 0 < on.spec.accepted <= on.spec.draft_tokens and len(on.spec.per_position) == 3
    assert on.server_spec_config["speculative_config"] == GUIDE_NGRAM
    # Accepted drafts are tokens the server did not spend a step on: its time per output token falls.
    assert on.server_means["tpot_mean_s"] < off.server_means["tpot_mean_s"]
    # AIPerf staged its dataset in the run's own folder, not in the machine's temp folder.
    assert list((runs_dir / BENCH_DIR / "direct-off").glob("aiperf_mmap_*"))
    lines = off_phase["lines"]
    assert lines[0].startswith("replay: warming up") and lines[-1].startswith("replay: done")

    # The report from both runs, as a user rebuilds it.
    out = runs_dir / BENCH_DIR / "bench"
    rebuilt = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", "--report-only", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    (row,) = report["rows"]
    assert (
        row["category"] == "traffic" and row["on"]["schedule"] == "closed" and row["off"]["request_count"] == REQUESTS
    )

    # bench: closed loop by default, so its speedup is the server's, not the capture's arrival rate.
    # Replayed at the capture's timestamps (2 s apart), requests of well under a second would leave the server
    # idle most of each run and the speedup near 1; in a closed loop requests are in flight almost all along.
    for side in ("off", "on"):
        assert row[side]["client_busy_share"] >= 0.75, (side, row[side]["client_busy_share"])
    # Its speedup no lower than 0.65x the closed-loop one around it (an arrival-bound bench reads about half)
    # and no higher than 1.5x, or within the closed loop's own before/after spread where that is wider: a check
    # cannot be finer than the noise. One server measured three times in a row on this 2-core machine read
    # 258.5, 345.2 and 279.1 tokens/s, its own time per output token moving with it (3.34, 2.50, 3.09 ms): the
    # machine, not the client; in another run bench read 1.29x the closed loop the same way.
    before, after = (
        on.output_tokens_per_s / off.output_tokens_per_s,
        on_after.output_tokens_per_s / off_after.output_tokens_per_s,
    )
    closed_speedup = (on.output_tokens_per_s + on_after.output_tokens_per_s) / (
        off.output_tokens_per_s + off_after.output_tokens_per_s
    )
    spread = abs(before - after) / ((before + after) / 2)
    figures = {
        "bench off/on": (row["off"]["output_tokens_per_s"], row["on"]["output_tokens_per_s"]),
        "closed loop off/off-after/on/on-after": (
            off.output_tokens_per_s,
            off_after.output_tokens_per_s,
            on.output_tokens_per_s,
            on_after.output_tokens_per_s,
        ),
        "client busy off/on": (row["off"]["client_busy_share"], row["on"]["client_busy_share"]),
    }
    # bench's own pair is a third reading on the same two servers, and its off and on runs can each fall
    # anywhere in that noise, in opposite directions: one run read off 244 and on 606 (0.85x and 1.15x of
    # the closed loop's nearest readings 281.5 and 525.3), a speedup of 2.48 against 1.63 with a spread of
    # 0.29. The upper bound allows that twice over; the lower one, which tells an arrival-bound bench, does not.
    low, high = closed_speedup * min(0.65, 1 - spread), closed_speedup * max(1.5, (1 + spread) ** 2)
    assert low <= row["speedup"] <= high, (row["speedup"], closed_speedup, spread, figures)
    assert row["tpot_ratio"] > 1, figures
    assert row["on"]["acceptance"]["acceptance_length"] > 1 and len(row["on"]["acceptance"]["per_position_rate"]) == 3
    assert row["off"]["server_spec_config"]["speculative_config"] is None
    assert row["on"]["server_spec_config"]["speculative_config"]["method"] == "ngram"
    md = (out / "report.md").read_text()
    for heading in ("## Throughput", "## Latency", "## Acceptance", "## What each server ran"):
        assert heading in md
    assert md in rebuilt.stdout and "closed loop, 1 in flight" in md and "server means: TTFT / TPOT / latency" in md
    assert all("nim-specdec bench: replay: done" in phase["stderr"] for phase in (off_phase, on_phase))
    assert "Found duplicate keys" not in ngram_run.log
    for png in ("throughput_on_off.png", "latency_on_off.png", "acceptance_by_position.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
