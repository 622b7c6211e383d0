"""tune's one-line answer: the recommendation against off over the measured rounds, weighted by the capture."""

from __future__ import annotations

import pytest

from nim_specdec_lab.stats import FASTER
from nim_specdec_lab.tune.deciding.answer import answer, trace_level


def rounds(*values: float) -> dict[int, float]:
    """Figures of rounds 1, 2, ...: round -> tokens/s."""
    return {n: v for n, v in enumerate(values, start=1)}


def test_recommendation_found_faster_with_an_interval():
    off = {1: rounds(100.0, 104.0, 98.0), 4: rounds(300.0, 310.0, 290.0)}
    rec = {1: rounds(150.0, 157.0, 146.0), 4: rounds(330.0, 340.0, 321.0)}
    got = answer(off, rec, level=1.0, margin=0.03)
    assert got["weights"] == {"1": 1.0} and got["verdict"] == FASTER
    assert got["speedup"] == pytest.approx(1.5, rel=0.01)
    low, high = got["speedup_interval"]
    assert low < got["speedup"] < high and "cannot tell" not in got["line"]
    assert got["line"].startswith("tune: expected speedup on this traffic (1.00 in flight")


def test_weighted_between_concurrencies_and_cannot_tell():
    off = {1: rounds(100.0, 130.0), 4: rounds(300.0, 250.0)}
    rec = {1: rounds(120.0, 110.0), 4: rounds(280.0, 300.0)}
    got = answer(off, rec, level=2.5, margin=0.03)
    assert got["weights"] == {"1": 0.5, "4": 0.5}
    assert got["verdict"] != FASTER and "cannot tell it from off" in got["line"]


def test_rounds_pair_by_position_not_by_order():
    # Round 2 of the recommendation is missing: rounds 1 and 3 pair with off's rounds 1 and 3.
    off = {1: {1: 100.0, 2: 50.0, 3: 110.0}}
    rec = {1: {1: 150.0, 3: 165.0}}
    got = answer(off, rec, level=1.0, margin=0.03)
    assert got["speedup"] == pytest.approx(1.5) and got["rounds"] == 2


def test_off_recommended_and_one_round():
    assert answer({1: rounds(100.0)}, None, None, 0.03)["line"].startswith("tune: speculation off recommended")
    one = answer({1: rounds(100.0)}, {1: rounds(150.0)}, None, 0.03)
    assert one["speedup"] == pytest.approx(1.5) and one["speedup_interval"] is None and "no interval" in one["line"]


def test_trace_level_needs_every_timestamp():
    assert trace_level([0, 1000, 2000], [1.5]) == pytest.approx(2.25)
    assert trace_level([0, None, 2000], [1.5]) is None


def test_decided_weighs_by_the_captures_level_and_pairs_servers_of_one_round():
    from nim_specdec_lab.ngram.trace import CapturedRequest
    from nim_specdec_lab.replay.spec import ReplayMeasurement
    from nim_specdec_lab.tune.lineup import candidates as cand
    from nim_specdec_lab.tune.runs.measurement import Round
    from nim_specdec_lab.tune.runs.rounds import Table
    from nim_specdec_lab.tune.session_result import decided

    def run(tok_s: float) -> dict[int, list[Round]]:
        # server_tokens_per_s = 1 x (output tokens / ok) / latency: 64 / 0.5 x tok_s / 128 = tok_s
        one = ReplayMeasurement(
            8, 8, 1, "closed", 1.0, int(8 * 64 * tok_s / 128), 0.0, {}, {}, {}, None, None, {"latency_mean_s": 0.5}
        )
        return {1: [Round("x", 1, one)]}

    ngram = cand.Candidate("ngram", {"method": "ngram", "num_speculative_tokens": 3}, configured=False)
    table = Table()
    for round_no, (off, fast) in enumerate([(100, 150), (60, 90), (102, 154)], start=1):
        table.add("off", round_no, run(off))  # round 2 was a slow minute for both servers
        table.add("ngram-k3", round_no, run(fast))
    captured = [CapturedRequest(i + 1, "/v1/chat/completions", {"messages": []}, 1000.0 * i) for i in range(3)]
    lineup = [("off", None), ("ngram-k3", dict(ngram.config))]
    decision, level = decided(captured, table, lineup, "ngram-k3", None, (1,), 0.03)
    assert level == pytest.approx(0.75)  # 3 requests over 2 s, 0.5 s each
    assert decision.recommended is not None and decision.recommended.name == "ngram-k3"
    traffic = decision.comparison("ngram-k3").traffic
    assert traffic.speedup == pytest.approx(1.5, rel=0.01) and traffic.interval[0] > 1.4
