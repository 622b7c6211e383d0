"""The replay engine against a real vLLM server (demo model, n-gram on) with the real AIPerf."""

from __future__ import annotations

import json

import pytest

from nim_specdec.tools.ngram.simulator import NgramParams
from nim_specdec.tools.replay import ReplaySpec, run_replay
from ngram_vllm_server import vllm_server

pytestmark = pytest.mark.e2e

# The demo model answers these with visible text from the first tokens on (some prompts make it emit
# special tokens, which stream as empty chunks and push the first visible token to the end).
PROMPTS = tuple(f"say {w} {w} {w} again and again" for w in ("cat", "dog", "sun", "tree"))


def test_closed_loop_replay_measures_streaming_and_server_counts(demo_target, aiperf_bin, tmp_path):
    lines: list[str] = []
    with vllm_server(demo_target, ["--max-model-len", "512"], tmp_path / "server.log", ngram=NgramParams(3, 1, 4)) as url:
        spec = ReplaySpec(
            url=url, model="tiny", requests=tuple({"messages": [{"role": "user", "content": p}], "temperature": 0.7} for p in PROMPTS),
            concurrency=2, request_count=6, greedy=True, max_tokens=24, ignore_eos=True, tokenizer=str(demo_target),
        )
        got = run_replay(spec, tmp_path / "run", aiperf_bin, progress=lines.append)

    assert (got.request_count, got.ok_count, got.concurrency, got.schedule) == (6, 6, 2, "closed")
    # ignore_eos with max_tokens 24: the server generated exactly 24 tokens per request.
    assert got.output_tokens == 6 * 24
    assert got.output_tokens_per_s == pytest.approx(got.output_tokens / got.duration_s)
    # Streamed: the first token comes before the whole answer, and tokens have gaps between them.
    assert 0 < got.ttft_s["p50"] < got.latency_s["p50"]
    assert got.itl_s["p50"] > 0 and set(got.latency_s) == {"p50", "p90", "p99"}
    assert got.spec is not None and got.spec.drafts > 0 and 0 < got.spec.accepted <= got.spec.draft_tokens
    assert len(got.spec.per_position) == 3
    assert got.server_spec_config["speculative_config"]["method"] == "ngram"
    assert got.server_spec_config["speculative_config"]["num_speculative_tokens"] == 3
    sent = [json.loads(line)["payload"] for line in (tmp_path / "run" / "replay_trace.jsonl").read_text().splitlines()]
    assert all(b["stream"] and b["temperature"] == 0 and b["max_tokens"] == 24 and b["model"] == "tiny" for b in sent)
    assert lines[0].startswith("replay: warming up") and lines[1].startswith("replay: 6 requests") and lines[-1].startswith("replay: done")
    assert json.loads((tmp_path / "run" / "measurement.json").read_text())["ok_count"] == 6
