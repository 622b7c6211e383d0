"""NIM_SPECDEC_ENABLE=1 with the guide's n-gram NIM_SPECDEC_ARGS string: drafts are made and reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.reference import simulate_request
from nim_specdec_lab.ngram.simulator import NgramParams, simulate
from vllm_runs import probe
from vllm_workload import MAX_TOKENS, PROMPTS, run_to_model_length

pytestmark = pytest.mark.e2e


def test_greedy_completions_succeed(ngram_run):
    assert [len(ids) for ids in ngram_run.outputs] == [MAX_TOKENS] * len(PROMPTS), ngram_run.context()
    assert ngram_run.chat_ok, ngram_run.context()


def test_spec_decode_counters_grow(ngram_run):
    growth = ngram_run.growth
    assert growth.drafts > 0 and growth.draft_tokens > 0, f"no drafts: {growth}" + ngram_run.context()
    # The demo model's greedy output runs in short cycles, which prompt lookup predicts.
    assert growth.accepted > 0, f"nothing accepted: {growth}" + ngram_run.context()
    assert growth.draft_tokens <= 3 * growth.drafts  # num_speculative_tokens is 3
    assert len(growth.per_position) == 3 and sum(growth.per_position) == growth.accepted


def test_report_gives_the_figures_of_the_raw_counters(ngram_run):
    growth = ngram_run.growth
    entry = ngram_run.report_json.get(ngram_run.model)
    assert entry is not None, f"report --json: {ngram_run.report_json} {ngram_run.report_stderr}"
    assert entry["status"] == "active"
    assert entry["drafts"] == growth.drafts and entry["draft_tokens"] == growth.draft_tokens
    assert entry["acceptance_rate"] == pytest.approx(growth.accepted / growth.draft_tokens)
    assert entry["acceptance_length"] == pytest.approx(1 + growth.accepted / growth.drafts)
    assert entry["per_position_rate"] == pytest.approx([v / growth.drafts for v in growth.per_position])
    assert f"acceptance rate    {growth.accepted / growth.draft_tokens:.4f}" in ngram_run.report_text
    assert f"acceptance length  {1 + growth.accepted / growth.drafts:.4f}" in ngram_run.report_text


def plan(env: dict) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "nim_specdec", "plan"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_specdec_args_switch_the_method(ngram_run):
    env = {**os.environ, **ngram_run.env}
    without = {k: v for k, v in env.items() if k != "NIM_SPECDEC_ARGS"}
    assert plan(without)["speculative"]["method"] == "draft_model"  # what the override replaces
    assert plan(env)["speculative"]["method"] == "ngram"
    # The server itself runs n-gram: vLLM logs its speculative config, and the draft was never loaded.
    assert "method='ngram'" in ngram_run.log, ngram_run.context()
    assert "draft_model" not in ngram_run.log.split("speculative_config", 1)[-1].split("\n", 1)[0]
    assert ngram_run.growth.drafts > 0


def test_smoke_module_passes_with_expect_spec(ngram_run):
    smoke = ngram_run.smoke
    assert smoke is not None and smoke.returncode == 0, f"{smoke.stdout}\n{smoke.stderr}" + ngram_run.context()
    assert "smoke: ok" in smoke.stdout and "acceptance rate" in smoke.stdout


def test_counters_match_the_ngram_rules_exactly(ngram_run):
    # Offline replay of the n-gram proposer over each request's prompt and output ids gives the very
    # deltas the server counted: the counters measure what the configured method did, nothing else.
    assert all(ngram_run.prompt_ids), "the server returned no prompt_token_ids"
    # The project's simulator (what tune-ngram uses) on what this server returned, with the guide's
    # setting; the extension past max_tokens covers the drafts the server verifies beyond it.
    requests = [
        RecordedRequest.of(prompt, extended[:MAX_TOKENS], extended[MAX_TOKENS:])
        for prompt, extended in zip(ngram_run.prompt_ids, ngram_run.extended)
    ]
    result = simulate(build_corpus(requests, max_ngram=4), NgramParams(k=3, min_n=1, max_n=4))
    growth = ngram_run.completions_growth
    assert (growth.drafts, growth.draft_tokens, growth.accepted) == (
        result.drafts,
        result.draft_tokens,
        result.accepted,
    ), ngram_run.context()


@probe("ngram")
def to_model_length(server, record, workdir):
    run_to_model_length(server.url, record, k=3, min_n=1, max_n=4)


def test_zero_drafts_at_the_model_length_are_predicted(ngram_run):
    # A request that runs to the model length: once the longest sequence plus k passes it, vLLM drafts
    # zeros instead of n-grams. The demo model's output cycles by construction (never through token 0),
    # so n-gram drafts there would be accepted and zero drafts are not: the two rules cannot agree by chance.
    ngram_run.probe("to_model_length")  # it ran, and did not fail
    run = ngram_run.extra["to_model_length"]
    prompt, output, limit = run["prompt"], run["output"], run["max_model_len"]
    assert len(prompt) + len(output) == limit, ngram_run.context()
    params = NgramParams(k=3, min_n=1, max_n=4)
    reference = simulate_request(prompt, output, [], params.k, params.min_n, params.max_n, limit)
    assert reference.zero_drafts > 0, "the request should reach the zero-draft regime"
    result = simulate(build_corpus([RecordedRequest.of(prompt, output)], max_ngram=4), params, limit)
    growth = run["growth"]
    assert (growth.drafts, growth.draft_tokens, growth.accepted) == tuple(int(x) for x in result.per_request[0])
    assert (reference.drafts, reference.draft_tokens, reference.accepted) == tuple(
        int(x) for x in result.per_request[0]
    )
