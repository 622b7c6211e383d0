"""tune's decision (decide.decide, the same call tune makes) over worlds that model the machine
(nim_specdec_lab.noise_worlds): a start effect per server shared by its concurrencies, a slow first server,
a drift within each round, run noise; two or three candidates; A/A worlds and true gains. Servers start in
tune's order (tune.runs.rounds.order_of). 1000 worlds or more per case, made at once with numpy.

Measured rates (seed fixed) are in each test's comment; the bounds are the issue's (A/A: speculation
recommended in at most 5% of worlds) or a little beyond the measured rate.
"""

from __future__ import annotations

import numpy as np
import pytest

from nim_specdec_lab import stats
from nim_specdec_lab.noise_worlds import HARSH, Machine, simulate
from nim_specdec_lab.tune.runs.rounds import order_of
from nim_specdec_lab.tune.studies.noise_study import a_a, recommended
from nim_specdec_lab.tune.studies.noise_study import share as study_share

MARGIN = 0.03
WORLDS = 1000
MACHINE = Machine(start_sd=0.10, run_sd=0.02, position=(-0.04,), drift_sd=0.02)


def tune_worlds(
    ratios: dict[int, list[float]],
    concurrencies: tuple[int, ...],
    weights: dict[int, float],
    rounds: int = 3,
    machine: Machine = MACHINE,
    rotate: bool = True,
    seed: int = 1,
) -> list[int | None]:
    """The configuration index recommended in each world (None: off)."""
    return recommended(ratios, concurrencies, weights, rounds, machine, WORLDS, seed, rotate, MARGIN)


def share(picks: list[int | None], which: set[int | None]) -> float:
    return study_share(picks, which).rate


EVEN3 = {1: 1 / 3, 4: 1 / 3, 16: 1 / 3}
CAPTURE = stats.concurrency_weights(3.0, (1, 2, 4, 8))  # 3 in flight: half on 2, half on 4


@pytest.mark.parametrize(
    "candidates,concurrencies,weights,machine",
    [
        (2, (1, 4, 16), EVEN3, MACHINE),
        (3, (1, 2, 4, 8), CAPTURE, MACHINE),
        (2, (1, 2, 4, 8), CAPTURE, MACHINE),
        (4, (1, 4, 16), EVEN3, HARSH),
    ],
    ids=["2-candidates-even", "3-candidates-capture", "2-candidates-capture", "4-candidates-harsh"],
)
def test_a_a_worlds_recommend_speculation_in_at_most_5_percent(candidates, concurrencies, weights, machine):
    # The rate's whole 95% interval at or under 5%, on the normal machine and on the harsh one (t(3) tails, a
    # quarter of the rounds loaded, drift across the tune). Measured: 1.6% / 2.3% / 3.0% on the normal one.
    ratios = {k: [1.0] * len(concurrencies) for k in range(1, candidates + 1)}
    picks = tune_worlds(ratios, concurrencies, weights, machine=machine)
    found = study_share(picks, set(range(1, candidates + 1)))
    assert found.interval()[1] <= 0.05, str(found)


@pytest.mark.parametrize("candidates", [1, 4, 8])
def test_the_family_wise_rate_stays_at_5_percent_with_1_4_and_8_candidates(candidates):
    # Every candidate equal to off at 1, 2, 4 and 8, equal weights, 3 rounds: the share of worlds that
    # recommend any of them, with its 95% Wilson interval, must sit at or under 5% (its point at most 5%,
    # the interval's high end at most 5.5%). Without Holm's step over the lineup it grew with the lineup (1500
    # worlds, seed 4: 1.3% / 5.1% / 11.3%); measured with it: 0.7% [0.4, 1.3] / 2.7% [2.0, 3.6] / 4.1% [3.2, 5.2].
    found = a_a(candidates, (1, 2, 4, 8), {1: 0.25, 2: 0.25, 4: 0.25, 8: 0.25}, worlds=1500, seed=4)
    assert found.rate <= 0.05 and found.interval()[1] <= 0.055, str(found)


def test_a_strong_position_effect_is_balanced_by_the_rotation():
    # The first server of a round 10% slow and a round drifting: with off always first (the former order) an
    # A/A candidate is recommended far more often than with the rotation. The test sees the order.
    slow_first = Machine(start_sd=0.03, run_sd=0.01, position=(-0.10,), drift_sd=0.01)
    a_a = {1: [1.0, 1.0, 1.0], 2: [1.0, 1.0, 1.0]}
    fixed = share(tune_worlds(a_a, (1, 4, 16), EVEN3, machine=slow_first, rotate=False), {1, 2})
    rotated = share(tune_worlds(a_a, (1, 4, 16), EVEN3, machine=slow_first), {1, 2})
    assert rotated <= 0.05 and fixed >= 0.3, (rotated, fixed)  # measured: 0.0% rotated, 48.5% fixed


def test_a_true_gain_is_found_and_an_a_a_neighbour_is_not_chosen():
    # Candidate 1 a true 1.5x everywhere, candidate 2 the same as off. Measured: 1.5x recommended in 61% of
    # worlds at 3 rounds and 98% at 5; the A/A candidate in 0.3% and 0%.
    ratios = {1: [1.5, 1.5, 1.5], 2: [1.0, 1.0, 1.0]}
    three = tune_worlds(ratios, (1, 4, 16), EVEN3)
    five = tune_worlds(ratios, (1, 4, 16), EVEN3, rounds=5)
    assert share(three, {1}) >= 0.55 and share(five, {1}) >= 0.95, (share(three, {1}), share(five, {1}))
    assert share(three, {2}) <= 0.05 and share(five, {2}) <= 0.05


@pytest.mark.parametrize("loss", [0.9, 0.97])
def test_a_loss_where_half_the_traffic_runs_is_rarely_called_a_gain(loss):
    # The review's shape: 1.6x at c=1, a true loss at c=4, each half the traffic; the weighted figure is a
    # gain, the loss at c=4 is real. Recommended only where c=4's interval excludes a loss beyond the 3%
    # margin by chance. Judged by c=4's point estimate (the former rule), 0.97x was recommended in 18.6% of
    # worlds at 3 rounds and 31.1% at 5 (2000 worlds). Measured now: 0.9x 0.2% / 0.0%; 0.97x 1.6% / 0.4%.
    three = share(tune_worlds({1: [1.6, loss]}, (1, 4), {1: 0.5, 4: 0.5}), {1})
    five = share(tune_worlds({1: [1.6, loss]}, (1, 4), {1: 0.5, 4: 0.5}, rounds=5), {1})
    assert three <= 0.05 and five <= 0.05, (three, five)


def test_the_machine_model_moves_the_ratios():
    # A factor shared by a round's servers cancels in a ratio; this model's start effects do not: the A/A
    # log ratios at one concurrency scatter by about sqrt(2) x start_sd.
    lineup = [0, 1]
    measured = simulate(MACHINE, np.zeros((2, 1)), [order_of(lineup, r) for r in (1, 2, 3)], 4000, 3)
    logs = np.log(measured[:, :, 1, 0] / measured[:, :, 0, 0])
    assert logs.std() == pytest.approx(np.sqrt(2 * 0.1**2 + 2 * 0.02**2 + 0.04**2 / 2 + 0.02**2), rel=0.1)
