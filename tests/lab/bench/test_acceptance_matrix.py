"""The acceptance matrix (configurations x categories, Overall) and the interval of each of its ratios."""

from __future__ import annotations

import math
import random

import pytest

import stats_reference as ref
from nim_specdec.engines.vllm.observe.spec_counters import SpecCounters
from nim_specdec_lab.bench.acceptance_interval import mean_of, ratio
from nim_specdec_lab.bench.acceptance_matrix import columns, from_runs, matrix
from nim_specdec_lab.replay.request_acceptance import RequestAcceptance
from nim_specdec_lab.replay.spec import ReplayMeasurement


def test_ratio_estimator_by_hand():
    units = [(6, 4), (2, 4), (9, 6)]  # (accepted, steps) of three prompts
    got = ratio(units)
    r = 17 / 14
    se = math.sqrt(3 / 2 * sum((a - r * s) ** 2 for a, s in units)) / 14
    assert got.value == pytest.approx(r) and got.se == pytest.approx(se) and got.df == 2
    assert got.interval == pytest.approx((r - ref.t975(2) * se, r + ref.t975(2) * se))
    assert ratio([(3, 4)]).interval is None and ratio([(0, 0), (0, 0)]) is None
    same = ratio([(3, 4), (6, 8)])  # every prompt the same ratio: nothing to be unsure about
    assert same.interval == pytest.approx((0.75, 0.75))


def test_mean_of_independent_ratios_satterthwaite():
    a, b = ratio([(6, 4), (2, 4), (9, 6)]), ratio([(1, 4), (2, 4), (3, 4), (4, 4)])
    got = mean_of([a, b])
    va, vb = a.se**2 / 4, b.se**2 / 4
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    assert got.value == pytest.approx((a.value + b.value) / 2) and got.df == pytest.approx(df)
    half = ref.t975(math.floor(df)) * math.sqrt(va + vb)
    assert got.interval == pytest.approx((got.value - half, got.value + half))
    assert mean_of([a, ratio([(1, 2)])]).interval is None and mean_of([]) is None


def test_ratio_interval_covers_the_category_in_95_percent_of_samples():
    # A category of 4000 prompts whose acceptance varies from prompt to prompt (and with their length);
    # 20 prompts drawn at a time, as a SPEED-Bench category gives: the interval holds the category's own
    # ratio in about 95% of 2000 draws.
    rnd = random.Random(7)
    population = []
    for _ in range(4000):
        steps = rnd.randint(3, 60)
        p = rnd.betavariate(2, 2)
        population.append((sum(rnd.random() < p for _ in range(3 * steps)), steps))
    truth = sum(a for a, _ in population) / sum(s for _, s in population)
    hits = 0
    for _ in range(2000):
        low, high = ratio(rnd.sample(population, 20)).interval
        hits += low <= truth <= high
    assert 0.92 <= hits / 2000 <= 0.98, hits / 2000


def r(request, label, steps, accepted, k=3):
    histogram = [0] * (k + 1)
    full, rest = divmod(accepted, k)
    histogram[k] = full
    histogram[rest] += 1 if rest else 0
    histogram[0] = steps - sum(histogram)
    assert histogram[0] >= 0
    return RequestAcceptance(request, label, steps, steps * k, accepted, tuple(histogram))


def test_matrix_is_laid_out_as_aiperf_speed_bench_report():
    records = [r(0, "writing", 10, 6), r(1, "coding", 10, 24), r(2, "writing", 10, 12), r(3, "coding", 10, 18)]
    found = matrix({"candidate": records, "baseline": []})
    # SPEED-Bench's category order (coding before writing), Overall last; no row for a side without responses.
    assert found["columns"] == ["coding", "writing", "Overall"]
    assert list(found["acceptance_length"]) == ["candidate"]
    row = found["acceptance_length"]["candidate"]
    assert row["coding"]["value"] == pytest.approx(1 + 42 / 20) and row["writing"]["value"] == pytest.approx(1.9)
    assert row["Overall"]["value"] == pytest.approx((3.1 + 1.9) / 2)  # AIPerf's Overall: the mean of the row
    rate = found["acceptance_rate"]["candidate"]
    assert rate["coding"]["value"] == pytest.approx(42 / 60) and rate["Overall"]["units"] == 4
    for cell in [*row.values(), *rate.values()]:
        low, high = cell["interval"]
        assert low <= cell["value"] <= high
    assert found["counts"]["candidate"]["coding"] == {
        "prompts": 2,
        "responses": 2,
        "steps": 20,
        "draft_tokens": 60,
        "accepted": 42,
    }


def test_a_prompt_answered_several_times_is_one_unit_and_the_ends_stay_possible():
    # The same prompt in two rounds: one prompt, two responses; one prompt gives no interval.
    found = matrix({"on": [r(0, "qa", 10, 30), r(0, "qa", 10, 30)]})
    cell = found["acceptance_length"]["on"]["qa"]
    assert cell == {"value": 4.0, "interval": None, "units": 1}
    assert found["counts"]["on"]["qa"]["responses"] == 2
    # Rates near 1 over few prompts: the delta interval would pass 1.0; it is kept within what is possible.
    high = matrix({"on": [r(0, "qa", 10, 30), r(1, "qa", 10, 27), r(2, "qa", 2, 6)]})
    assert high["acceptance_rate"]["on"]["qa"]["interval"][1] == 1.0
    assert high["acceptance_length"]["on"]["qa"]["interval"][1] == 4.0  # 1 + num_speculative_tokens


@pytest.mark.parametrize(
    "names, expected",
    [
        (["writing", "math", "coding"], ["coding", "math", "writing"]),
        (["high_entropy", "low_entropy"], ["low_entropy", "high_entropy"]),
        (["traffic", "coding"], ["coding", "traffic"]),
    ],
)
def test_columns_follow_speed_bench_order(names, expected):
    assert columns(names) == expected


def _run(records, drafts, accepted):
    spec = SpecCounters(drafts, drafts * 3, accepted, (0.0, 0.0, 0.0)) if drafts is not None else None
    return ReplayMeasurement(2, 2, 1, "closed", 1.0, 64, 64.0, {}, {}, {}, spec, None, requests_acceptance=records)


def test_from_runs_says_what_the_matrix_does_not_cover():
    both = (r(0, "qa", 10, 20), r(1, "qa", 6, 9))
    found, notes = from_runs(
        {
            "baseline": [_run(None, None, 0)],  # speculation off: no row, nothing to say
            "candidate1": [_run(both, 16, 29)],  # every draft the server counted is in a response
            "candidate2": [_run(None, 40, 30)],  # drafted, but its server did not report per request
            "candidate3": [_run(both, 20, 33)],  # the server counted drafts no response carries
        }
    )
    assert list(found["acceptance_length"]) == ["candidate1", "candidate3"]
    assert len(notes) == 2
    assert notes[0].startswith("candidate2 drafted") and "--per-request-spec-decode-metrics summary" in notes[0]
    assert notes[1].startswith("candidate3: the responses' acceptance covers 16 of the 20 drafts")
    assert from_runs({"baseline": [_run(None, None, 0)]}) == (None, [])
