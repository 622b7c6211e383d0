"""Capture inside a real CPU vLLM server, then replay of the capture file with AIPerf.

Each format rides on a shared speculating run (mooncake_payload on ngram_run, raw_payload on eagle3_run)
as a probe that goes first: N concurrent chat requests (half of them streaming) and a few requests to
other endpoints, then the capture file must hold exactly the N chat requests; AIPerf replays the file
against the same server and completes every request while its server-metrics export shows vLLM's
speculative-decoding counters; at SIGTERM the server exits 0 and the file holds the replayed requests
next, every line complete (the run's later traffic is captured after them).
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from capture_harness import read_lines

from nim_specdec.observe.smoke import http_get
from nim_specdec_lab.replay.aiperf_run import aiperf_env
from vllm_runs import SERVED_NAME, aiperf_bin, probe

pytestmark = pytest.mark.e2e

N = 8
SPEC_COUNTERS = (
    "vllm:spec_decode_num_drafts",
    "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens",
)


def chat_request(i: int) -> dict:
    body = {
        "model": SERVED_NAME,
        "temperature": 0,
        "max_tokens": 6 + i,
        "messages": [
            {"role": "system", "content": "Count.\nThen repeat."},
            {"role": "user", "content": f"one two three one two three \u00e9t\u00e9 #{i}"},
        ],
    }
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
    status, text = http_get(f"{base}/metrics")
    assert status == 200
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " ")]
    assert values, f"{name} is not on {base}/metrics"
    return values[0]


def post(url: str, body: dict | bytes) -> int:
    """The status of one POST; a streamed answer is read to its end."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def send_traffic(base: str) -> list[dict]:
    # Requests the pattern does not match come first: recorded by mistake, they would be in the file.
    assert post(f"{base}/v1/completions", {"model": SERVED_NAME, "prompt": "one two", "max_tokens": 3}) == 200
    assert http_get(f"{base}/v1/models")[0] == 200
    assert post(f"{base}/v1/chat/completions", b"{not json") >= 400  # matches, cannot be replayed: not recorded
    bodies = [chat_request(i) for i in range(N)]
    with ThreadPoolExecutor(N) as pool:
        results = list(pool.map(lambda b: post(f"{base}/v1/chat/completions", b), bodies))
    assert results == [200] * N
    return bodies


def run_aiperf(
    base: str, model: Path, dataset_type: str, trace: Path, out: Path, extra: list[str]
) -> tuple[dict, dict]:
    cmd = [
        aiperf_bin(),
        "profile",
        "--model",
        SERVED_NAME,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--url",
        base.removeprefix("http://"),
        "--custom-dataset-type",
        dataset_type,
        "--input-file",
        str(trace),
        "--tokenizer",
        str(model),
        "--server-metrics",
        f"{base}/metrics",
        "--output-artifact-dir",
        str(out),
        "--ui-type",
        "none",
        *extra,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=aiperf_env(scratch=out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    profile = json.loads((out / "profile_export_aiperf.json").read_text())
    server = json.loads((out / "server_metrics_export.json").read_text())
    return profile, server


def counter_total(server_export: dict, name: str) -> float:
    series = server_export["metrics"][name]["series"]
    return sum(s["stats"]["total"] for s in series)


FORMATS = {
    # format: (the run it rides on, AIPerf dataset type, extra AIPerf options)
    "mooncake_payload": ("ngram", "mooncake_trace", []),
    "raw_payload": ("eagle3", "raw_payload", ["--request-count", str(N), "--concurrency", "4"]),
}


def capture_file(workdir: Path, fmt: str) -> Path:
    return workdir / f"captures-{fmt}" / "traffic.jsonl"


def capture_env(fmt: str):
    return lambda workdir: {
        "NIM_CAPTURE_ENABLE": "1",
        "NIM_CAPTURE_ARGS": json.dumps({"path": str(capture_file(workdir, fmt)), "format": fmt}),
    }


def capture_then_replay(fmt: str, base: str, record, workdir: Path) -> dict:
    """Everything up to the stop; returns what the test checks after it."""
    _, dataset_type, extra = FORMATS[fmt]
    capture = capture_file(workdir, fmt)
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

    trace = workdir / f"trace-{fmt}.jsonl"
    trace.write_bytes(capture.read_bytes())  # a snapshot: the replay's own requests get captured too
    model = Path(record.env["NIM_MODEL_PATH"])
    profile, server = run_aiperf(base, model, dataset_type, trace, workdir / f"aiperf-{fmt}", extra)
    assert profile["request_count"]["avg"] == N
    assert profile["error_summary"] == []
    for name in SPEC_COUNTERS:
        assert name in server["metrics"], f"{name} missing from the server metrics export"
    assert counter_total(server, "vllm:spec_decode_num_drafts") > 0
    assert counter_total(server, "vllm:spec_decode_num_draft_tokens") > 0
    assert counter_total(server, "nim_capture_records_written") == N  # the replay is captured too
    return {"capture": capture, "before_replay": len(lines), "bodies": bodies}


@probe("ngram", before_workload=True, env=capture_env("mooncake_payload"))
def capture_mooncake(server, record, workdir):
    return capture_then_replay("mooncake_payload", server.url, record, workdir)


@probe("eagle3", before_workload=True, env=capture_env("raw_payload"))
def capture_raw(server, record, workdir):
    return capture_then_replay("raw_payload", server.url, record, workdir)


def check_after_stop(fmt: str, run) -> None:
    seen = run.probe("capture_mooncake" if fmt == "mooncake_payload" else "capture_raw")
    # SIGTERM; the queue is flushed before the process exits.
    assert run.stop.returncode == 0, f"exit code {run.stop.returncode} after SIGTERM" + run.context()
    after = read_lines(seen["capture"])
    replayed = after[seen["before_replay"] : seen["before_replay"] + N]
    assert len(replayed) == N
    assert canonical([line["payload"] for line in replayed] if fmt == "mooncake_payload" else replayed) == canonical(
        seen["bodies"]
    )


def test_capture_then_replay_mooncake_payload(ngram_run):
    check_after_stop("mooncake_payload", ngram_run)


def test_capture_then_replay_raw_payload(eagle3_run):
    check_after_stop("raw_payload", eagle3_run)
