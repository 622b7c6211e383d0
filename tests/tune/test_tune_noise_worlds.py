"""tune's decision (decide.decide, the same call tune makes) over worlds that model the machine
(nim_specdec_lab.noise_worlds): a start effect per server shared by its concurrencies, a slow first server,
a drift within each round, run noise; two or three candidates; A/A worlds and true gains. Servers start in
tune's order (tune.rounds.order_of). 1000 worlds or more per case, made at once with numpy.

Measured rates (seed fixed) are in each test's comment; the bounds are the issue's (A/A: speculation
recommended in at most 5% of worlds) or a little beyond the measured rate.
"""

from __future__ import annotations

import numpy as np
import pytest

from nim_specdec_lab import stats
from nim_specdec_lab.noise_worlds import Machine, figures, simulate, true_log_speedups
from nim_specdec_lab.tune.decide import Option, decide
from nim_specdec_lab.tune.rounds import order_of

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
    lineup = list(range(1 + len(ratios)))
    orders = [order_of(lineup, r) if rotate else lineup for r in range(1, rounds + 1)]
    measured = simulate(machine, true_log_speedups(ratios, len(concurrencies)), orders, WORLDS, seed)
    out = []
    for w in range(WORLDS):
        off = figures(measured, w, 0, concurrencies)
        options = [Option(str(k), {"k": k}, figures(measured, w, k, concurrencies)) for k in ratios]
        chosen = decide(off, options, weights, MARGIN).recommended
        out.append(None if chosen is None else int(chosen.name))
    return out


def share(picks: list[int | None], which: set[int | None]) -> float:
    return sum(p in which for p in picks) / len(picks)


EVEN3 = {1: 1 / 3, 4: 1 / 3, 16: 1 / 3}
CAPTURE = stats.concurrency_weights(3.0, (1, 2, 4, 8))  # 3 in flight: half on 2, half on 4


@pytest.mark.parametrize(
    "candidates,concurrencies,weights",
    [(2, (1, 4, 16), EVEN3), (3, (1, 2, 4, 8), CAPTURE), (2, (1, 2, 4, 8), CAPTURE)],
    ids=["2-candidates-even", "3-candidates-capture", "2-candidates-capture"],
)
def test_a_a_worlds_recommend_speculation_in_at_most_5_percent(candidates, concurrencies, weights):
    # Measured: 2.1% / 3.8% / 3.0%.
    picks = tune_worlds({k: [1.0] * len(concurrencies) for k in range(1, candidates + 1)}, concurrencies, weights)
    assert share(picks, set(range(1, candidates + 1))) <= 0.05


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


def test_a_loss_where_half_the_traffic_runs_is_rarely_called_a_gain():
    # The review's shape: 1.6x at c=1, a true 0.9x at c=4, each half the traffic; the weighted figure is a gain
    # (1.2x), the loss at c=4 is real. Recommended only where c=4's estimate came out at or above 1 by chance.
    # Measured: 5.9% at 3 rounds, 6.1% at 5: the rule bounds it by the chance that c=4's estimate reads at
    # or above 1 while the traffic's interval clears 1 + margin.
    three = share(tune_worlds({1: [1.6, 0.9]}, (1, 4), {1: 0.5, 4: 0.5}), {1})
    five = share(tune_worlds({1: [1.6, 0.9]}, (1, 4), {1: 0.5, 4: 0.5}, rounds=5), {1})
    assert three <= 0.10 and five <= 0.10, (three, five)


def test_the_machine_model_moves_the_ratios():
    # A factor shared by a round's servers cancels in a ratio; this model's start effects do not: the A/A
    # log ratios at one concurrency scatter by about sqrt(2) x start_sd.
    lineup = [0, 1]
    measured = simulate(MACHINE, np.zeros((2, 1)), [order_of(lineup, r) for r in (1, 2, 3)], 4000, 3)
    logs = np.log(measured[:, :, 1, 0] / measured[:, :, 0, 0])
    assert logs.std() == pytest.approx(np.sqrt(2 * 0.1**2 + 2 * 0.02**2 + 0.04**2 / 2 + 0.02**2), rel=0.1)
