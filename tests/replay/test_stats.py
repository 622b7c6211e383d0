"""The lab's statistics against a noise model of this kind of machine: every round's servers share a slow or
fast stretch of the machine (a log-normal drift, sd 0.3: 1.4x between rounds is common), and each server
adds its own log-normal noise (sd sigma)."""

from __future__ import annotations

import math
import random

import pytest

from nim_specdec_lab.stats import (
    FASTER,
    NO_DIFFERENCE,
    SLOWER,
    by_position,
    concurrency_weights,
    in_flight,
    one_line,
    paired,
    rounds_to_resolve,
    t975,
    verdict,
    weighted,
    wholly_below,
)

DRIFT = 0.3


def simulated_rounds(rng: random.Random, true_speedup: float, sigma: float, rounds: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(rounds):
        machine = math.exp(rng.gauss(0, DRIFT))
        base = 100.0 * machine * math.exp(rng.gauss(0, sigma))
        cand = 100.0 * true_speedup * machine * math.exp(rng.gauss(0, sigma))
        out.append((base, cand))
    return out


def verdicts(true_speedup: float, sigma: float, rounds: int, runs: int = 1000, seed: int = 7) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {FASTER: 0, SLOWER: 0, NO_DIFFERENCE: 0}
    for _ in range(runs):
        counts[paired(simulated_rounds(rng, true_speedup, sigma, rounds)).verdict] += 1
    return counts


@pytest.mark.parametrize("rounds", [2, 3, 5])
@pytest.mark.parametrize("sigma", [0.05, 0.1, 0.3])
def test_a_a_runs_find_no_difference_in_95_percent(rounds, sigma):
    counts = verdicts(1.0, sigma, rounds)
    assert counts[NO_DIFFERENCE] >= 950, counts


def test_a_true_1_3x_with_sigma_0_1_is_found_faster():
    # sigma 0.1 per server: a round's log ratio scatters by 0.14. Six rounds find it in about 9 runs of 10.
    counts = verdicts(1.3, 0.1, rounds=6)
    assert counts[FASTER] >= 850 and counts[SLOWER] == 0, counts
    # The default three rounds can only tell larger effects at this noise: they find 1.3x in a fraction
    # of runs, never call it slower, and say so through the smallest detectable effect.
    three = verdicts(1.3, 0.1, rounds=3)
    assert 200 <= three[FASTER] < 800 and three[SLOWER] == 0, three
    assert verdicts(1.8, 0.1, rounds=3)[FASTER] >= 900


def test_a_true_slowdown_is_found_slower():
    counts = verdicts(0.7, 0.05, rounds=3)
    assert counts[SLOWER] >= 900 and counts[FASTER] == 0, counts


def test_pairing_cancels_the_shared_drift():
    # Every round 1.5x apart from the last, the ratio within each round steady: a tight interval.
    result = paired([(100, 130), (150, 195.5), (66.7, 86.6)])
    assert result.speedup == pytest.approx(1.3, rel=0.01)
    low, high = result.interval
    assert 1.28 < low < 1.3 < high < 1.32 and result.verdict == FASTER


def test_interval_by_hand():
    # log ratios 0.1, 0.2, 0.3: mean 0.2, sd 0.1, se 0.1 / sqrt(3); t(2) = 4.303
    pairs = [(1.0, math.exp(0.1)), (1.0, math.exp(0.2)), (1.0, math.exp(0.3))]
    result = paired(pairs, margin=0.03)
    half = 4.303 * 0.1 / math.sqrt(3)
    assert result.speedup == pytest.approx(math.exp(0.2))
    assert result.interval == pytest.approx((math.exp(0.2 - half), math.exp(0.2 + half)))
    assert result.verdict == NO_DIFFERENCE  # low = 0.95: the interval reaches below 1 + margin
    assert result.detectable == pytest.approx((1.03 * math.exp(half), 0.97 * math.exp(-half)))
    data = result.to_json()
    assert data["speedup_interval"] == [round(math.exp(0.2 - half), 4), round(math.exp(0.2 + half), 4)]
    assert data["verdict"] == NO_DIFFERENCE and data["rounds"] == 3


def test_one_round_has_no_interval_and_no_verdict():
    result = paired([(100.0, 150.0)])
    assert result.speedup == pytest.approx(1.5) and result.interval is None and result.verdict is None
    assert "no interval" in one_line(result, "here")


@pytest.mark.parametrize(
    "low,high,margin,expected",
    [
        (1.04, 1.5, 0.03, FASTER),
        (1.02, 1.5, 0.03, NO_DIFFERENCE),
        (1.02, 1.5, 0.0, FASTER),
        (0.5, 0.96, 0.03, SLOWER),
        (0.5, 0.98, 0.03, NO_DIFFERENCE),
        (0.9, 1.1, 0.0, NO_DIFFERENCE),
    ],
)
def test_verdict_table(low, high, margin, expected):
    assert verdict(low, high, margin) == expected


def test_t_quantiles():
    assert t975(1) == 12.706 and t975(2) == 4.303 and t975(30) == 2.042
    assert t975(31) == pytest.approx(2.040, abs=2e-3) and t975(120) == pytest.approx(1.980, abs=2e-3)
    with pytest.raises(ValueError):
        t975(0)


def test_little_law_and_weights():
    # 11 requests over 10 s, each 2 s in the system: 2.2 in flight on average
    assert in_flight([1000 * i for i in range(11)], [2.0] * 11) == pytest.approx(2.2)
    assert in_flight([5], [1.0]) is None and in_flight([0, 0], [1.0]) is None
    assert concurrency_weights(2.2, [1, 2, 4]) == pytest.approx({2: 0.9, 4: 0.1})
    assert concurrency_weights(0.3, [1, 2]) == {1: 1.0}
    assert concurrency_weights(9.0, [1, 2]) == {2: 1.0}
    assert concurrency_weights(None, [1, 4]) == {1: 0.5, 4: 0.5}


def test_weighted_combination():
    one = paired([(100, 120), (100, 125), (100, 118)])
    four = paired([(100, 90), (100, 95), (100, 93)])
    assert weighted({1: one, 4: four}, {1: 1.0}).speedup == pytest.approx(one.speedup)
    both = weighted({1: one, 4: four}, {1: 0.5, 4: 0.5})
    assert both.speedup == pytest.approx(math.sqrt(one.speedup * four.speedup))
    assert both.interval[0] < both.speedup < both.interval[1] and both.rounds == 3
    assert weighted({1: paired([(1.0, 2.0)])}, {1: 1.0}) is None


def test_by_position_pairs_the_same_round_on_each_side():
    # Round 2 is missing on the candidate's side and round 4 has no figure: rounds 1 and 3 pair.
    got = by_position({1: 100.0, 2: 50.0, 3: 110.0, 4: 0.0}, {1: 150.0, 3: 165.0, 4: 90.0})
    assert got.rounds == 2 and got.speedup == pytest.approx(1.5)
    assert by_position({1: 100.0}, {2: 150.0}) is None


@pytest.mark.parametrize(
    "pairs,below",
    [
        ([(100, 70), (100, 72), (100, 68)], True),  # 0.70x beyond doubt
        ([(100, 70), (100, 120), (100, 68)], False),  # reaches above 1
        ([(100, 70)], False),  # one round: no interval, never wholly below
    ],
)
def test_wholly_below_one(pairs, below):
    assert wholly_below(paired(pairs)) is below
    assert wholly_below(None) is False


def test_rounds_to_resolve_matches_the_interval():
    # At a log spread of 0.14 between rounds (sigma 0.1 per server), 1.3x needs 4 rounds, 1.8x needs 3, and a
    # 0.7x slowdown 4.
    assert rounds_to_resolve(0.14, 1.3) == 4 and rounds_to_resolve(0.14, 1.8) == 3
    assert rounds_to_resolve(0.14, 0.7) == 4
    assert rounds_to_resolve(0.14, 1.02) is None  # inside the margin: no number of rounds tells it
    n = rounds_to_resolve(0.14, 1.3)
    # n rounds exactly at that spread clear 1 + margin; n - 1 do not.
    for rounds, clears in ((n, True), (n - 1, False)):
        half = t975(rounds - 1) * 0.14 / math.sqrt(rounds)
        assert (math.log(1.3) - half > math.log(1.03)) is clears
    result = paired([(100, 100 * math.exp(0.1)), (100, 100 * math.exp(0.2)), (100, 100 * math.exp(0.3))])
    assert result.log_sd == pytest.approx(0.1)
