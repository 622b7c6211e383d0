"""Suffix decoding served by `nim-specdec serve` on a real vLLM server, against speculation off.

The shared server without speculation (tests/vllm_runs.py's off run) replays the capture through
`nim-specdec simulate --save-records` (the user's path); then one server per suffix configuration
gets the same requests one at a time, with /metrics read around each (one configuration: vLLM's defaults). Greedy outputs must equal speculation off, the counters
must grow, and the simulator on the records from the server without speculation must predict
the drafts, draft tokens and accepted tokens of every request and their totals.

The defaults server is started the way Kubernetes checks it: its readiness is polled on
/v1/health/ready, whose first success sends a one-token completion ("ready?") that the global
suffix tree keeps. The prediction models it as history.
"""  # noqa: E501

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters, parse_prometheus, summed
from nim_specdec_lab.ngram.corpus import RecordedRequest
from nim_specdec_lab.ngram.http_replay import http_json, load_records
from nim_specdec_lab.ngram.trace import greedy_payload, parse_capture, token_ids
from nim_specdec_lab.server_process import ServerSpec, running_server
from nim_specdec_lab.suffix.simulator import SuffixParams, simulate_suffix
from vllm_runs import MAX_MODEL_LEN, SERVER_ARGS, demo_env, probe

pytestmark = pytest.mark.e2e

# (id, NIM_SPECDEC_ARGS speculative_config, the same as simulator parameters, readiness path)
# One server (a start costs a minute on 2 cores): vLLM's defaults, under which num_speculative_tokens becomes
# the tree depth, 24, and 10000 responses stay cached, so the global tree (the harder half of the model) is
# used across requests. A configuration without the global tree (max_cached_requests 0) is the per-request
# half alone: `simulate`'s grid below holds its row; the trees are arctic-inference's own (the simulator drives
# its SuffixDecodingCache), and test_simulator.py checks that without a global tree requests stay apart.
CONFIGS = [("defaults", {"method": "suffix"}, SuffixParams(24), "/v1/health/ready")]
WORDS = "the fox jumps over a lazy dog while drafts verify tokens in one pass".split()


def _payloads() -> list[dict]:
    """12 requests: chat and completions, repeats of earlier prompts and of earlier answers' words."""
    out = []
    for i in range(10):
        words = " ".join(WORDS[(i * 3 + j) % len(WORDS)] for j in range(6 + i % 4))
        if i % 3 == 0:
            out.append({"model": "demo", "prompt": words, "max_tokens": 24 + 4 * i})
        else:
            out.append({"model": "demo", "max_tokens": 20 + 3 * i, "messages": [{"role": "user", "content": words}]})
    out.append(dict(out[1]))  # the same request again: its own earlier answer is in the global tree
    # Runs to the model length (a chat request without max_tokens may): drafts there are cut, then
    # replaced by zeros.
    out.append(
        {
            "model": "demo",
            "ignore_eos": True,
            "messages": [{"role": "user", "content": "a lazy dog while the fox jumps " * 4}],
        }
    )
    return out


def _metrics(base: str) -> SpecCounters:
    with urllib.request.urlopen(base + "/metrics", timeout=30) as resp:
        return summed(parse_prometheus(resp.read().decode()))


def _env(demo_model: Path, workdir: Path, spec: dict | None) -> dict[str, str]:
    env = demo_env(demo_model, workdir, NIM_SPECDEC_ENABLE="1" if spec else "0")
    if spec:
        env["NIM_SPECDEC_ARGS"] = json.dumps({"speculative_config": json.dumps(spec)})
    return env


def _write_capture(path: Path) -> Path:
    path.write_text("".join(json.dumps({"timestamp": 500 * i, "payload": p}) + "\n" for i, p in enumerate(_payloads())))
    return path


@probe("off")
def suffix_records(server, record, workdir):
    """`simulate` against the server without speculation: records, report; and the readiness probe's ids."""
    out = workdir / "suffix-off"
    out.mkdir(exist_ok=True)
    capture = _write_capture(out / "traffic.jsonl")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nim_specdec",
            "simulate",
            "--trace",
            str(capture),
            "--url",
            server.url,
            "--method",
            "suffix",
            "--suffix-k",
            "8,24",
            "--suffix-cached",
            "0,10000",
            "--concurrency",
            "1",
            "--save-records",
            str(out / "records.jsonl"),
            "--json",
            str(out / "report.json"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    # The launcher's readiness probe, as it sends it (nim_specdec.server.endpoints), with ids returned.
    probe_prompt, probe_output, _ = token_ids(
        http_json(
            server.url + "/v1/completions",
            {"model": "demo", "prompt": "ready?", "max_tokens": 1, "temperature": 0, "return_token_ids": True},
        )
    )
    assert proc.returncode == 0, proc.stderr
    records, saved_len = load_records(str(out / "records.jsonl"))
    return (
        records,
        saved_len,
        json.loads((out / "report.json").read_text()),
        RecordedRequest.of(probe_prompt, probe_output),
    )


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> Path:
    return _write_capture(tmp_path_factory.mktemp("suffix-capture") / "traffic.jsonl")


@pytest.fixture(scope="module")
def off_records(off_run):
    records, saved_len, report, ready_probe = off_run.probe("suffix_records")
    assert saved_len == MAX_MODEL_LEN and len(records) == len(_payloads())
    assert len(records[-1].prompt) + len(records[-1].output) == MAX_MODEL_LEN, (
        "the last request should reach the model length"
    )
    return records, report, ready_probe


@pytest.fixture(scope="module", params=CONFIGS, ids=[c[0] for c in CONFIGS])
def suffix_run(request, demo_model, capture, tmp_path_factory):
    """One server per configuration; every request sent alone, /metrics read before and after it."""
    name, config, params, ready_path = request.param
    out = tmp_path_factory.mktemp(f"suffix-{name}")
    spec = ServerSpec(
        env=_env(demo_model, out, config),
        args=SERVER_ARGS,
        log_path=out / "vllm.log",
        ready_timeout_s=600,
        ready_path=ready_path,
    )
    observed, outputs = [], []
    with running_server(spec) as server:
        for captured in parse_capture(capture.read_text().splitlines()):
            before = _metrics(server.url)
            prompt, output, _ = token_ids(
                http_json(server.url + captured.path, greedy_payload(captured.payload, "demo"))
            )
            observed.append(_metrics(server.url).minus(before).counts())
            outputs.append((prompt, output))
    return name, params, ready_path, observed, outputs


def test_greedy_outputs_equal_speculation_off(off_records, suffix_run):
    records, _, _ = off_records
    _, _, _, _, outputs = suffix_run
    assert [(list(r.prompt), list(r.output)) for r in records] == outputs


def test_counters_grow(suffix_run):
    _, params, _, observed, _ = suffix_run
    assert sum(d["drafts"] for d in observed) > 0
    assert sum(d["accepted"] for d in observed) > 0
    assert max(d["draft_tokens"] - params.k * d["drafts"] for d in observed) <= 0


def test_prediction_equals_server_counters_per_request_and_in_total(off_records, suffix_run):
    records, report, ready_probe = off_records
    name, params, ready_path, observed, _ = suffix_run
    history = [ready_probe] if ready_path == "/v1/health/ready" else []
    result = simulate_suffix(records, params, MAX_MODEL_LEN, history=history)
    predicted = [dict(zip(("drafts", "draft_tokens", "accepted"), map(int, row))) for row in result.per_request]
    served = [{key: d[key] for key in ("drafts", "draft_tokens", "accepted")} for d in observed]
    print(f"\n{name}: per request (predicted == served): {served}")
    print(f"{name}: total drafts {result.drafts}, draft tokens {result.draft_tokens}, accepted {result.accepted}")
    assert predicted == served
    totals = {key: sum(d[key] for d in served) for key in ("drafts", "draft_tokens", "accepted")}
    assert (result.drafts, result.draft_tokens, result.accepted) == (
        totals["drafts"],
        totals["draft_tokens"],
        totals["accepted"],
    )
    positions = tuple(sum(d.get(f"pos{i}", 0) for d in observed) for i in range(params.k))
    assert result.accepted_per_pos == positions
    # `simulate`'s row for this configuration (a fresh server, no probe) is the same simulation.
    row = next(
        r
        for r in report["grid"]
        if r["num_speculative_tokens"] == params.k
        and r["suffix_decoding_max_cached_requests"] == params.max_cached_requests
    )
    plain = simulate_suffix(records, params, MAX_MODEL_LEN)
    assert (row["drafts"], row["draft_tokens"], row["accepted_tokens"]) == (
        plain.drafts,
        plain.draft_tokens,
        plain.accepted,
    )
