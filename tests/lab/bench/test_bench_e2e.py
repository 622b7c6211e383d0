"""bench's --url flow against the shared vLLM runs (the demo model with speculation off, then the guide's
n-gram) with the real AIPerf: one bench run on each server, into one --out, then the report rebuilt.

The capture's requests are spread out in time. Replayed at those times, output tokens/s would measure the
arrival rate and the speedup would read about 1.0; bench replays a closed loop by default, which AIPerf's own
record of the run shows (a concurrency phase, not a fixed schedule) and the server's busy share confirms. The
n-gram server also reports each response's acceptance (--per-request-spec-decode-metrics summary, added to
its environment by this module's probe): the report's acceptance matrix comes from those responses, and
over the run they add up to exactly what the server's counters grew by.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from nim_specdec.observe.smoke import post_json
from vllm_runs import GUIDE_NGRAM, SERVED_NAME, aiperf_bin, probe

pytestmark = pytest.mark.e2e

# The demo model answers these with visible text from its first tokens on (prompts that make it emit
# special tokens stream empty chunks, which moves the first visible token to the end).
WORDS = ("cat", "dog", "sun", "tree", "sea", "sky", "red", "blue", "one", "two", "hat", "cup")
PROMPTS = tuple(f"say {w} {w} {w} again and again" for w in WORDS)
SPREAD_MS = 2000
MAX_TOKENS = 128
# Each prompt twice: a run lasts seconds even with speculation on, and each prompt is answered twice (the
# acceptance matrix sums a prompt's responses before it counts prompts).
REQUESTS = 2 * len(PROMPTS)
BENCH_DIR = "bench-e2e"
PER_REQUEST = "--per-request-spec-decode-metrics summary"


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


def _bench(*options: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", *options], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _phase(mode: str, url: str, tokenizer: str, workdir: Path) -> dict:
    """bench --mode MODE on one server, into the one --out both servers share."""
    root = workdir / BENCH_DIR
    root.mkdir(exist_ok=True)
    capture = _capture(root / "traffic.jsonl")
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
    return {"stderr": bench.stderr}


@probe("off")
def bench_off(server, record, workdir):
    return _phase("off", server.url, record.env["NIM_MODEL_PATH"], workdir)


def _raw_answers(url: str) -> dict:
    """One request answered whole and one streamed (with the usage chunk, as bench asks): what the server puts
    in a response, read here without AIPerf."""
    body = {"model": SERVED_NAME, "messages": [{"role": "user", "content": PROMPTS[0]}], "max_tokens": 24}
    status, whole = post_json(url + "/v1/chat/completions", {**body, "temperature": 0}, timeout=120)
    streamed = {**body, "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    ask = urllib.request.Request(
        url + "/v1/chat/completions", json.dumps(streamed).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(ask, timeout=120) as answer:  # loopback: the shared server
        text = answer.read().decode()
    chunks = [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: {")]
    return {"status": status, "whole": whole, "chunks": chunks}


# The shared n-gram server reports each response's acceptance, as servers bench --serve starts do.
@probe("ngram", env=lambda workdir: {"NIM_PASSTHROUGH_ARGS": PER_REQUEST})
def bench_on(server, record, workdir):
    return {**_phase("on", server.url, record.env["NIM_MODEL_PATH"], workdir), "raw": _raw_answers(server.url)}


SUMMARY_KEYS = {
    "mean_acceptance_length",
    "draft_acceptance_rate",
    "acceptance_histogram",
    "num_spec_steps",
    "num_accepted_draft_tokens",
    "num_draft_tokens",
    "num_spec_tokens",
}
PER_STEP_KEYS = {"per_step_accepted", "per_step_drafted"}  # `detailed` only


def test_a_response_carries_its_own_acceptance(ngram_run):
    """vLLM 0.32's summary, as docs/measuring.md describes it: on a whole answer under
    metrics.speculative_decoding, on a stream only on its last chunk (the usage chunk)."""
    streamed_keys = set(ngram_run.probe("bench_on")["raw"]["chunks"][-1]["metrics"]["speculative_decoding"])
    assert streamed_keys == SUMMARY_KEYS, streamed_keys
    raw = ngram_run.probe("bench_on")["raw"]
    assert raw["status"] == 200, raw
    streamed = raw["chunks"]
    assert [c for c in streamed[:-1] if "metrics" in c] == [] and streamed[-1]["choices"] == []
    for found in (raw["whole"]["metrics"]["speculative_decoding"], streamed[-1]["metrics"]["speculative_decoding"]):
        # `summary`: no per-step lists (a whole answer names them, null; a stream's chunk leaves them out).
        assert set(found) - SUMMARY_KEYS <= PER_STEP_KEYS and SUMMARY_KEYS <= set(found), found
        assert all(found.get(k) is None for k in PER_STEP_KEYS), found
        histogram, steps, accepted = (
            found["acceptance_histogram"],
            found["num_spec_steps"],
            found["num_accepted_draft_tokens"],
        )
        assert len(histogram) == found["num_spec_tokens"] + 1 == GUIDE_NGRAM["num_speculative_tokens"] + 1
        assert sum(histogram) == steps > 0 and sum(j * n for j, n in enumerate(histogram)) == accepted
        assert accepted <= found["num_draft_tokens"] <= 3 * steps
        assert found["mean_acceptance_length"] == pytest.approx(1 + accepted / steps)
        assert found["draft_acceptance_rate"] == pytest.approx(accepted / found["num_draft_tokens"])


def test_bench_replays_a_closed_loop_and_reads_acceptance_from_the_responses(off_run, ngram_run, runs_dir):
    off_phase, on_phase = off_run.probe("bench_off"), ngram_run.probe("bench_on")
    out = runs_dir / BENCH_DIR / "bench"
    # The report from both runs, as a user rebuilds it.
    rebuilt = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "bench", "--report-only", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    (row,) = report["rows"]
    off, on = row["off"], row["on"]

    # The engine: streamed, tokens as the server counted them, the server's own counters, timings and config.
    for got in (off, on):
        assert (got["request_count"], got["ok_count"], got["concurrency"], got["schedule"]) == (
            REQUESTS,
            REQUESTS,
            1,
            "closed",
        )
        assert got["output_tokens"] == REQUESTS * MAX_TOKENS  # ignore_eos: every request ran to max_tokens
        assert got["output_tokens_per_s"] == pytest.approx(got["output_tokens"] / got["duration_s"])
        assert 0 < got["ttft_s"]["p50"] <= got["latency_s"]["p50"] and got["itl_s"]["p50"] >= 0
        means = got["server_means"]
        assert means["requests"] == REQUESTS and 0 < means["ttft_mean_s"] < means["latency_mean_s"]
        # TPOT is decode time / (tokens - 1): below the whole latency / tokens' share once prefill is out.
        assert 0 < means["tpot_mean_s"] * (MAX_TOKENS - 1) <= means["latency_mean_s"]
        assert got["sampling"] == {"greedy": True, "max_tokens": MAX_TOKENS, "ignore_eos": True}
    assert off["spec"] is None and off["server_spec_config"]["speculative_config"] is None
    assert 0 < on["spec"]["accepted"] <= on["spec"]["draft_tokens"] and len(on["spec"]["per_position"]) == 3
    assert on["server_spec_config"]["speculative_config"] == GUIDE_NGRAM
    # The ratio is the server's own means, off / on. Whether tokens come faster is a measurement (the bench
    # scripts' to make): on a busy 2-core machine one run of 24 short requests read 0.85 once.
    assert (
        row["tpot_ratio"] == pytest.approx(off["server_means"]["tpot_mean_s"] / on["server_means"]["tpot_mean_s"])
        and row["tpot_ratio"] > 0
    )
    assert on["acceptance"]["acceptance_length"] > 1 and len(on["acceptance"]["per_position_rate"]) == 3
    for mode, phase in (("off", off_phase), ("on", on_phase)):
        run = out / "runs" / mode / "traffic"
        # AIPerf staged its dataset in the run's own folder, not in the machine's temp folder.
        assert list(run.glob("aiperf_mmap_*"))
        # Closed loop by default: AIPerf ran a concurrency phase of every request, one in flight, and the
        # server had a request for most of the run. At the capture's times (2 s apart, answers of 0.1 to 0.4 s)
        # it would have had one a sixth of the time or less, and the speedup would read about 1.0. A closed
        # loop here read 0.80 to 0.96: the rest is the client's turnaround, longer when the machine is busy.
        (phase_cfg,) = json.loads((run / "aiperf" / "profile_export_aiperf.json").read_text())["input_config"]["phases"]
        assert (phase_cfg["type"], phase_cfg["concurrency"], phase_cfg["requests"]) == ("concurrency", 1, REQUESTS)
        assert row[mode]["client_busy_share"] >= 0.5, (mode, row[mode]["client_busy_share"])
        lines = [line for line in phase["stderr"].splitlines() if "nim-specdec bench: replay: " in line]
        assert "replay: warming up" in lines[0] and "replay: done" in lines[-1]
    assert row["speedup"] == pytest.approx(on["output_tokens_per_s"] / off["output_tokens_per_s"])
    assert row["speedup_interval"] is None and "no interval" in row["verdict_note"]

    # Each response's acceptance, summed, is what the server's counters grew by during the run: exactly.
    matrix = report["acceptance_matrix"]
    assert matrix["columns"] == ["traffic", "Overall"] and list(matrix["acceptance_length"]) == ["on"]
    counts = matrix["counts"]["on"]["traffic"]
    assert (counts["steps"], counts["draft_tokens"], counts["accepted"]) == (
        on["spec"]["drafts"],
        on["spec"]["draft_tokens"],
        on["spec"]["accepted"],
    )
    assert (counts["prompts"], counts["responses"]) == (len(PROMPTS), REQUESTS)
    cell = matrix["acceptance_length"]["on"]["traffic"]
    assert cell["value"] == pytest.approx(on["acceptance"]["acceptance_length"], abs=1e-4)
    assert cell["interval"][0] <= cell["value"] <= cell["interval"][1] and cell["units"] == len(PROMPTS)
    assert not [w for w in report["warnings"] if "covers" in w or "per-request" in w], report["warnings"]
    assert PER_REQUEST.split()[0] in " ".join(ngram_run.args) + ngram_run.log

    md = (out / "report.md").read_text()
    for heading in ("## Throughput", "## Latency", "## Acceptance", "## Acceptance by category", "## What each"):
        assert heading in md
    assert md in rebuilt.stdout and "closed loop, 1 in flight" in md and "server means: TTFT / TPOT / latency" in md
    assert "| configuration | traffic | Overall |" in md
    assert "Found duplicate keys" not in ngram_run.log
    for png in (
        "throughput_on_off.png",
        "latency_on_off.png",
        "acceptance_by_position.png",
        "acceptance_by_category.png",
    ):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
