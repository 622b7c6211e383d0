"""Capture inside a real CPU vLLM server, then replay of the capture file with AIPerf.

One server per format: N concurrent chat requests (half of them streaming) and a few requests to
other endpoints, then the capture file must hold exactly the N chat requests; AIPerf replays the
file against the same server and completes every request while its server-metrics export shows
vLLM's speculative-decoding counters; at SIGTERM the server exits and the file holds the replayed
requests too, every line complete.
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from capture_harness import read_lines
from capture_vllm_server import MODEL_NAME, get, post, stop, vllm_server

from nim_specdec.server.capture.capture_config import capture_middleware_args, parse_capture

pytestmark = pytest.mark.e2e

N = 8
SPEC_COUNTERS = ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
                 "vllm:spec_decode_num_accepted_tokens")


def chat_request(i: int) -> dict:
    body = {"model": MODEL_NAME, "temperature": 0, "max_tokens": 6 + i,
            "messages": [{"role": "system", "content": "Count.\nThen repeat."},
                         {"role": "user", "content": f"one two three one two three \u00e9t\u00e9 #{i}"}]}
    if i % 2 == 0:
        body["stream"] = True
    return body


def canonical(payloads: list[dict]) -> list[str]:
    return sorted(json.dumps(p, sort_keys=True) for p in payloads)


def wait_for_lines(path: Path, count: int, timeout: float = 15.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(read_lines(path)) < count:
        time.sleep(0.1)
    time.sleep(0.5)  # anything recorded by mistake would show up by now
    return read_lines(path)


def metric_value(base: str, name: str) -> float:
    status, text = get(f"{base}/metrics")
    assert status == 200
    values = [float(line.split()[-1]) for line in text.decode().splitlines() if line.startswith(name + " ")]
    assert values, f"{name} is not on {base}/metrics"
    return values[0]


def send_traffic(base: str) -> list[dict]:
    # Requests the pattern does not match come first: recorded by mistake, they would be in the file.
    assert post(f"{base}/v1/completions", {"model": MODEL_NAME, "prompt": "one two", "max_tokens": 3})[0] == 200
    assert get(f"{base}/v1/models")[0] == 200
    assert post(f"{base}/v1/chat/completions", b"{not json")[0] >= 400  # matches, cannot be replayed: not recorded
    bodies = [chat_request(i) for i in range(N)]
    with ThreadPoolExecutor(N) as pool:
        results = list(pool.map(lambda b: post(f"{base}/v1/chat/completions", b), bodies))
    assert [status for status, _ in results] == [200] * N
    return bodies


def run_aiperf(aiperf_bin: str, base: str, model: Path, dataset_type: str, trace: Path, out: Path,
               extra: list[str]) -> tuple[dict, dict]:
    cmd = [aiperf_bin, "profile", "--model", MODEL_NAME, "--endpoint-type", "chat", "--streaming",
           "--url", base.removeprefix("http://"), "--custom-dataset-type", dataset_type, "--input-file", str(trace),
           "--tokenizer", str(model), "--server-metrics", f"{base}/metrics", "--output-artifact-dir", str(out),
           "--ui-type", "none", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    profile = json.loads((out / "profile_export_aiperf.json").read_text())
    server = json.loads((out / "server_metrics_export.json").read_text())
    return profile, server


def counter_total(server_export: dict, name: str) -> float:
    series = server_export["metrics"][name]["series"]
    return sum(s["stats"]["total"] for s in series)


@pytest.mark.parametrize("fmt,dataset_type,extra", [
    ("mooncake_payload", "mooncake_trace", []),
    ("raw_payload", "raw_payload", ["--request-count", str(N), "--concurrency", "4"]),
])
def test_capture_then_replay(tmp_path, tiny_model, aiperf_bin, fmt, dataset_type, extra):
    capture = tmp_path / "captures" / "traffic.jsonl"
    env = {"NIM_CAPTURE_ENABLE": "1", "NIM_CAPTURE_ARGS": json.dumps({"path": str(capture), "format": fmt})}
    args = capture_middleware_args(parse_capture(env))
    with vllm_server(tiny_model, tmp_path / "server.log", env, args) as (base, proc):
        bodies = send_traffic(base)
        lines = wait_for_lines(capture, N)
        payloads = [line["payload"] for line in lines] if fmt == "mooncake_payload" else lines
        assert canonical(payloads) == canonical(bodies)
        if fmt == "mooncake_payload":
            # Counted from the first matching request (the non-JSON one), so a replay starts at once.
            assert 0 <= min(line["timestamp"] for line in lines) < 10_000
            assert all(isinstance(line["timestamp"], int) for line in lines)
        assert metric_value(base, "nim_capture_records_written_total") == N
        assert metric_value(base, 'nim_capture_records_dropped_total{reason="not_json"}') == 1

        trace = tmp_path / "trace.jsonl"
        trace.write_bytes(capture.read_bytes())  # a snapshot: the replay's own requests get captured too
        profile, server = run_aiperf(aiperf_bin, base, tiny_model, dataset_type, trace, tmp_path / "aiperf", extra)
        assert profile["request_count"]["avg"] == N
        assert profile["error_summary"] == []
        for name in SPEC_COUNTERS:
            assert name in server["metrics"], f"{name} missing from the server metrics export"
        assert counter_total(server, "vllm:spec_decode_num_drafts") > 0
        assert counter_total(server, "vllm:spec_decode_num_draft_tokens") > 0
        assert counter_total(server, "nim_capture_records_written") == N  # the replay is captured too

        assert stop(proc) is not None  # SIGTERM; the queue is flushed before the process exits
    after = read_lines(capture)
    replayed = after[len(lines):]
    assert len(replayed) == N
    assert canonical([line["payload"] for line in replayed] if fmt == "mooncake_payload" else replayed) \
        == canonical(bodies)
