"""The simulator predicts exactly the counters of a real vLLM server that `nim-specdec serve` started.

For each request of a capture: read /metrics, send it greedily, read /metrics again; the
deltas of drafts, draft tokens and accepted tokens must equal the simulation of that
request's token ids. The token ids come from the speculating server itself, and also from
`tune-ngram --save-records` against a server without speculation (the way users run it).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ngram_traffic import MAX_MODEL_LEN, write_capture

from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters, parse_prometheus, summed
from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.http_replay import continuation, http_json, load_records
from nim_specdec_lab.ngram.simulator import NgramParams, simulate
from nim_specdec_lab.ngram.trace import greedy_payload, parse_capture, token_ids
from vllm_runs import probe

pytestmark = pytest.mark.e2e

# The shared n-gram server runs the guide's setting (3, 1, 4); tests/e2e/test_ngram.py checks its workload and
# the zero drafts near the model length the same way. Other settings (k above max, min above 1) are checked
# against vLLM's own proposer in-process (test_reference_matches_vllm.py), without a server start each.
PARAMS = NgramParams(3, 1, 4)


def _metrics(base: str) -> SpecCounters:
    import urllib.request

    with urllib.request.urlopen(base + "/metrics", timeout=30) as resp:
        return summed(parse_prometheus(resp.read().decode()))


@probe("off")
def tune_plain(server, record, workdir):
    """tune-ngram against the shared server without speculation, the way users run it."""
    out = workdir / "tune-plain"
    out.mkdir(exist_ok=True)
    capture = write_capture(out / "traffic.jsonl")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nim_specdec",
            "tune-ngram",
            "--trace",
            str(capture),
            "--url",
            server.url,
            "--save-records",
            str(out / "records.jsonl"),
            "--json",
            str(out / "report.json"),
            "--k",
            "1-5",
            "--min",
            "1-2",
            "--max",
            "1-4",
            "--concurrency",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc, out


@pytest.fixture(scope="session")
def plain_run(off_run):
    """The records, JSON report, stdout and folder of tune-ngram against the server without speculation."""
    proc, out = off_run.probe("tune_plain")
    assert proc.returncode == 0, proc.stderr
    records, saved_len = load_records(str(out / "records.jsonl"))
    assert saved_len == MAX_MODEL_LEN
    return records, json.loads((out / "report.json").read_text()), proc.stdout, out


@probe("ngram")
def capture_replayed(server, record, workdir):
    """The capture's requests sent greedily to the speculating server, one at a time: each one's counter
    deltas, and its token ids with the continuation the server verifies drafts against."""
    base = server.url
    model = http_json(base + "/v1/models")["data"][0]["id"]
    observed, recorded = [], []
    for captured in parse_capture(write_capture(workdir / "exact-traffic.jsonl").read_text().splitlines()):
        url = base + captured.path
        greedy = greedy_payload(captured.payload, model)
        before = _metrics(base)
        prompt, output, _ = token_ids(http_json(url, greedy))
        observed.append(_metrics(base).minus(before).counts())
        room = min(PARAMS.k + 1, MAX_MODEL_LEN - len(prompt) - len(output))
        tail = continuation(url, greedy, output, room) if room > 0 else []
        assert tail is not None, "greedy continuation diverged from the output"
        recorded.append(RecordedRequest.of(prompt, output, tail))
    return observed, recorded


def test_tune_ngram_reports_a_ready_setting(plain_run):
    records, report, stdout, _ = plain_run
    assert len(records) == 5 and all(len(r.output) > 0 for r in records)
    assert report["max_model_len"] == MAX_MODEL_LEN
    assert len(report["grid"]) == 5 * (4 + 3)  # k 1-5 x (min, max) pairs with min <= max
    inner = json.loads(report["recommended"]["NIM_SPECDEC_ARGS"])["speculative_config"]
    assert inner["method"] == "ngram" and 1 <= inner["prompt_lookup_min"] <= inner["prompt_lookup_max"] <= 4
    assert ("NIM_SPECDEC_ARGS=" in stdout) or ("keep speculation off" in stdout)


def test_prediction_equals_server_counters(plain_run, ngram_run):
    params = PARAMS
    plain_records, _, _, _ = plain_run
    observed, recorded = ngram_run.probe("capture_replayed")
    result = simulate(build_corpus(recorded, max_ngram=params.max_n, pad=PARAMS.k + 2), params, MAX_MODEL_LEN)
    predicted = [dict(zip(("drafts", "draft_tokens", "accepted"), map(int, row))) for row in result.per_request]
    served = [{key: d[key] for key in ("drafts", "draft_tokens", "accepted")} for d in observed]
    assert predicted == served
    assert sum(d["accepted"] for d in served) > 0, "the traffic should exercise acceptance"
    positions = tuple(sum(d.get(f"pos{i}", 0) for d in observed) for i in range(params.k))
    assert result.accepted_per_pos == positions

    # The user's path: token ids recorded without speculation predict the same counters,
    # as long as both servers produced the same greedy tokens.
    same = [i for i, (a, b) in enumerate(zip(plain_records, recorded)) if a.prompt == b.prompt and a.output == b.output]
    assert len(same) >= 4, "greedy outputs with and without speculation should agree"
    from_plain = simulate(build_corpus(plain_records, max_ngram=params.max_n, pad=PARAMS.k + 2), params, MAX_MODEL_LEN)
    assert [tuple(from_plain.per_request[i]) for i in same] == [tuple(result.per_request[i]) for i in same]
