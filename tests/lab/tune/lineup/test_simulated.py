"""Acceptance curves of n-gram from recorded token ids: the exact simulator's counts at every K."""

from __future__ import annotations

import pytest

from nim_specdec_lab.ngram.corpus import RecordedRequest, build_corpus
from nim_specdec_lab.ngram.reference import simulate_request
from nim_specdec_lab.ngram.simulator import NgramParams
from nim_specdec_lab.tune.lineup.simulated import ngram_curve, pick_ngram_lookup
from nim_specdec_lab.tune.model.acceptance import slot_figures

CYCLE = [7, 8, 9, 10]
RECORDS = [
    RecordedRequest.of([1, 2, 7, 8, 9], (CYCLE * 6)[:20], CYCLE[:4]),  # output repeats: n-gram accepts
    RecordedRequest.of([3, 4, 5, 6], [11, 12, 13, 14, 15, 16, 17, 18], [19, 20, 21, 22]),  # never repeats
]


def test_the_curve_is_the_reference_proposer_at_every_k():
    # Expected from the naive reference model of vLLM's proposer (ngram.reference, checked against vLLM's own
    # proposer in tests/lab/ngram), not from the fast simulator the curve uses: tokens per slot = output tokens /
    # (output tokens - accepted), draft tokens per slot = draft tokens / the same slots.
    curve = ngram_curve(RECORDS, kmax=3, lookup_min=1, lookup_max=3, max_model_len=None)
    output = sum(len(r.output) for r in RECORDS)
    assert curve.kmax == 3 and curve.at(0).tokens_per_slot == 1.0
    for k in (1, 2, 3):
        counts = [simulate_request(r.prompt, r.output, r.tail, k, 1, 3, 10**6) for r in RECORDS]
        accepted, drafted = sum(c.accepted for c in counts), sum(c.draft_tokens for c in counts)
        slots = output - accepted
        assert curve.at(k).tokens_per_slot == pytest.approx(output / slots)
        assert curve.at(k).draft_tokens_per_slot == pytest.approx(drafted / slots)
    # The output that never repeats never drafts; the repeating one is accepted.
    never = simulate_request(RECORDS[1].prompt, RECORDS[1].output, RECORDS[1].tail, 3, 1, 3, 10**6)
    assert never.drafts == 0 and curve.at(3).tokens_per_slot > 1.5
    assert curve.at(1).tokens_per_slot < curve.at(3).tokens_per_slot


def test_lookup_lengths_come_from_the_grid():
    lo, hi = pick_ngram_lookup(RECORDS, kmax=3, max_model_len=None)
    assert 1 <= lo <= hi <= 5


def test_suffix_curve_assumes_the_replay_has_answered_each_request_before():
    from nim_specdec_lab.ngram.corpus import RecordedRequest as R  # noqa: PLC0415
    from nim_specdec_lab.suffix.simulator import SuffixParams, simulate_suffix  # noqa: PLC0415
    from nim_specdec_lab.tune.lineup.simulated import suffix_curve  # noqa: PLC0415

    config = {"method": "suffix", "num_speculative_tokens": 3, "suffix_decoding_max_tree_depth": 16}
    curve = suffix_curve(RECORDS, config, None)
    total = sum(len(r.output) for r in RECORDS)
    for k in (1, 2, 3):
        warm = simulate_suffix(RECORDS, SuffixParams(k=k, max_tree_depth=16), None, history=RECORDS)
        assert curve.at(k).tokens_per_slot == slot_figures(total, warm.accepted, warm.draft_tokens)[0]
    # A server that has seen the answers accepts more than a fresh one would.
    cold = simulate_suffix(RECORDS, SuffixParams(k=3, max_tree_depth=16), None)
    assert curve.at(3).tokens_per_slot > slot_figures(total, cold.accepted, cold.draft_tokens)[0]
    # The curve reads the warm figures, not the cold ones: they differ on these records.
    assert warm.accepted > cold.accepted and R is RecordedRequest


def test_a_v2_curve_is_the_v2_simulation_and_says_so():
    from nim_specdec_lab.ngram.simulator_v2 import simulate_v2  # noqa: PLC0415

    curve = ngram_curve(RECORDS, kmax=3, lookup_min=1, lookup_max=3, max_model_len=None, model_runner="v2")
    corpus = build_corpus(RECORDS, max_ngram=3, pad=4, occurrence="last")
    for k in (1, 2, 3):
        sim = simulate_v2(corpus, NgramParams(k, 1, 3))
        assert (curve.at(k).tokens_per_slot, curve.at(k).draft_tokens_per_slot) == slot_figures(
            corpus.output_tokens, sim.accepted, sim.draft_tokens
        )
        # V2 verifies k draft tokens at every decode step, matched or not.
        assert sim.draft_tokens == k * sim.steps
    v1 = ngram_curve(RECORDS, kmax=3, lookup_min=1, lookup_max=3, max_model_len=None)
    assert curve.at(3).draft_tokens_per_slot > v1.at(3).draft_tokens_per_slot
    assert curve.to_json()["model_runner"] == "v2" and v1.to_json()["model_runner"] == "v1"


def test_tune_md_names_the_runner_of_each_simulated_curve():
    from nim_specdec_lab.tune.reporting.report import build_result  # noqa: PLC0415
    from nim_specdec_lab.tune.reporting.report_md import render_markdown  # noqa: PLC0415

    curve = ngram_curve(RECORDS, kmax=2, lookup_min=1, lookup_max=3, max_model_len=None, model_runner="v2")
    result = build_result(
        recommended_env={},
        chosen=None,
        decision={"line": "tune: no candidate to compare with off; speculation off"},
        rows=[],
        concurrencies=[1],
        verification=[],
        cost_model={"formula": "f", "base_s": 0.01, "per_seq_s": 0.001, "methods": {}},
        acceptance={"ngram": curve.to_json(), "draft_model": {"source": "server counters", "by_k": []}},
        methods=[],
        servers=[],
        lineup=["off"],
        runs=[],
        notes=[],
        duration_s=1.0,
    )
    text = render_markdown(result)
    assert "- ngram (simulator, V2 model runner): K=0: 1.000" in text
    assert "- draft_model (server counters): " in text


@pytest.mark.parametrize(
    "env,platform,expected",
    [
        ({}, "cuda", "v2"),
        ({}, "cpu", "v1"),
        ({"VLLM_USE_V2_MODEL_RUNNER": "0"}, "cuda", "v1"),
        ({"VLLM_USE_V2_MODEL_RUNNER": "1"}, "cuda", "v2"),
        ({"VLLM_USE_V2_MODEL_RUNNER": "2"}, "cuda", "v2"),
        ({"VLLM_USE_V2_MODEL_RUNNER": "0"}, "cpu", "v1"),
        ({"OTHER": "1"}, "cuda", "v2"),
    ],
)
def test_the_serving_runner(env, platform, expected):
    from nim_specdec.engines.vllm.release.host_vars import read_vllm_host  # noqa: PLC0415
    from nim_specdec_lab.ngram.model_runner import serving_runner  # noqa: PLC0415

    assert serving_runner(read_vllm_host(env).use_v2_model_runner, platform) == expected


@pytest.mark.parametrize(
    "value,platform,problem",
    [("yes", "cuda", "invalid value"), ("", "cuda", "invalid value"), ("1", "cpu", "no Triton")],
)
def test_a_serving_runner_vllm_would_refuse_is_exit_2(value, platform, problem):
    from nim_specdec.engines.vllm.release.host_vars import read_vllm_host  # noqa: PLC0415
    from nim_specdec.errors import ConfigError  # noqa: PLC0415
    from nim_specdec_lab.ngram.model_runner import serving_runner  # noqa: PLC0415

    with pytest.raises(ConfigError, match=problem) as caught:
        serving_runner(read_vllm_host({"VLLM_USE_V2_MODEL_RUNNER": value}).use_v2_model_runner, platform)
    assert caught.value.exit_code == 2 and "VLLM_USE_V2_MODEL_RUNNER" in str(caught.value)
