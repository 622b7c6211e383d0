"""tune's one-line answer: the recommendation against off over the measured rounds, weighted by the capture."""

from __future__ import annotations

import pytest

from nim_specdec_lab.stats import FASTER
from nim_specdec_lab.tune.answer import answer, trace_level


def test_recommendation_found_faster_with_an_interval():
    off = {1: [100.0, 104.0, 98.0], 4: [300.0, 310.0, 290.0]}
    rec = {1: [150.0, 157.0, 146.0], 4: [330.0, 340.0, 321.0]}
    got = answer(off, rec, level=1.0, margin=0.03)
    assert got["weights"] == {"1": 1.0} and got["verdict"] == FASTER
    assert got["speedup"] == pytest.approx(1.5, rel=0.01)
    low, high = got["speedup_interval"]
    assert low < got["speedup"] < high and "cannot tell" not in got["line"]
    assert got["line"].startswith("tune: expected speedup on this traffic (1.00 in flight")


def test_weighted_between_concurrencies_and_cannot_tell():
    off = {1: [100.0, 130.0], 4: [300.0, 250.0]}
    rec = {1: [120.0, 110.0], 4: [280.0, 300.0]}
    got = answer(off, rec, level=2.5, margin=0.03)
    assert got["weights"] == {"1": 0.5, "4": 0.5}
    assert got["verdict"] != FASTER and "cannot tell it from off" in got["line"]


def test_off_recommended_and_one_round():
    assert answer({1: [100.0]}, None, None, 0.03)["line"].startswith("tune: speculation off recommended")
    one = answer({1: [100.0]}, {1: [150.0]}, None, 0.03)
    assert one["speedup"] == pytest.approx(1.5) and one["speedup_interval"] is None and "no interval" in one["line"]


def test_trace_level_needs_every_timestamp():
    assert trace_level([0, 1000, 2000], [1.5]) == pytest.approx(2.25)
    assert trace_level([0, None, 2000], [1.5]) is None


def test_session_pairs_the_recommendations_own_servers_with_off():
    from nim_specdec_lab.ngram.trace import CapturedRequest
    from nim_specdec_lab.replay.spec import ReplayMeasurement
    from nim_specdec_lab.tune import candidates as cand
    from nim_specdec_lab.tune.runner import Round
    from nim_specdec_lab.tune.session_result import final_answer as _answer, pool_of as _pool_of

    def run(tok_s: float) -> ReplayMeasurement:
        # server_tokens_per_s = 1 x (output tokens / ok) / latency: 64 / 0.5 x tok_s / 128 = tok_s
        return ReplayMeasurement(
            8, 8, 1, "closed", 1.0, int(8 * 64 * tok_s / 128), 0.0, {}, {}, {}, None, None, {"latency_mean_s": 0.5}
        )

    ngram = cand.Candidate("ngram", {"method": "ngram", "num_speculative_tokens": 3}, configured=False)
    pooled = {
        "off": {1: [Round("off", 1, run(100)), Round("off", 2, run(102))]},
        "ngram-k3": {1: [Round("ngram-k3", 1, run(150)), Round("ngram-k3", 2, run(154))]},
    }
    assert _pool_of(dict(ngram.config), [ngram], pooled) == "ngram-k3"
    assert _pool_of(None, [ngram], pooled) is None
    assert (
        _pool_of({"method": "ngram", "num_speculative_tokens": 2}, [ngram], {**pooled, "recommended": {}})
        == "recommended"
    )
    captured = [CapturedRequest(i + 1, "/v1/chat/completions", {"messages": []}, 1000.0 * i) for i in range(3)]
    got = _answer(captured, pooled, "ngram-k3", 0.03)
    assert got["in_flight"] == pytest.approx(0.75)  # 3 requests over 2 s, 0.5 s each
    assert got["speedup"] == pytest.approx(1.5, rel=0.01) and got["speedup_interval"] is not None
