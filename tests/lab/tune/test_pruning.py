"""tune's pruning rules (tune.pruning), table-driven on plain figures, and what they cost the answer in
simulated worlds (tune.pruning_study): the same recommendation as the full sweep, at most one sweep plus one
server, the useless draft served once."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from nim_specdec_lab.noise_worlds import Machine, simulate, true_log_speedups
from nim_specdec_lab.tune import pruning
from nim_specdec_lab.tune.acceptance import AcceptanceCurve, AcceptancePoint
from nim_specdec_lab.tune.noise_study import Share
from nim_specdec_lab.tune.pruning_study import compare

EVEN = {1: 0.5, 4: 0.5}


def _curve(*tokens_per_slot: float) -> AcceptanceCurve:
    points = [AcceptancePoint(0, 1.0, 0.0)]
    points += [AcceptancePoint(k, t, float(k)) for k, t in enumerate(tokens_per_slot, start=1)]
    return AcceptanceCurve("simulator", tuple(points))


def _figs(*by_round: tuple[float, float]) -> dict[int, dict[int, float]]:
    """Figures at concurrencies 1 and 4, one (c=1, c=4) pair per round."""
    return {c: {r: pair[i] for r, pair in enumerate(by_round, start=1)} for i, c in enumerate((1, 4))}


@pytest.mark.parametrize(
    "points, hopeless",
    [
        ((1.0, 1.0, 1.0), True),  # nothing accepted at any K
        ((1.01, 1.02, 1.029), True),  # best K gives 1.029 tokens per step: below 1 + 3% even for free
        ((1.01, 1.031), False),
        ((1.4, 1.2), False),  # the best K counts, not the largest
    ],
)
def test_a_method_that_cannot_beat_off_even_for_free_is_not_served(points, hopeless):
    found = pruning.unservable({"ngram": _curve(*points)}, 0.03)
    assert ("ngram" in found) == hopeless
    if hopeless:
        assert found["ngram"] == pytest.approx(max(points))


def test_screen_threshold_is_rare_for_a_candidate_equal_to_off_on_the_lab_machine_model():
    # One round's ratio of two servers carries two start effects: sd 0.10 * sqrt(2) in log.
    spread = Machine().start_sd * math.sqrt(2)
    assert norm.cdf(math.log(pruning.SCREEN) / spread) < 1 / 6000  # the module's "1 round of 6,600"
    assert norm.cdf((math.log(pruning.SCREEN) - math.log(0.97)) / spread) < 1 / 2800  # "1 of 2,900"
    # The same on the simulated machine (position and drift effects too): 40,000 first rounds of off and an
    # equal candidate, the candidate started second as in tune.
    measured = simulate(Machine(), true_log_speedups({1: [1.0, 1.0]}, 2), [[0, 1]], 40_000, seed=5)
    ratio = np.exp(np.log(measured[:, 0, 1, :] / measured[:, 0, 0, :]).mean(axis=1))
    assert (ratio < pruning.SCREEN).mean() < 1 / 2000


@pytest.mark.parametrize(
    "candidate, screened",
    [
        (_figs((30.0, 90.0)), True),  # 0.3x at both concurrencies
        (_figs((59.0, 239.0)), True),  # just below 0.6x on the even traffic
        (_figs((61.0, 241.0)), False),
        (_figs((20.0, 800.0)), False),  # 0.2x at c=1, 2x at c=4: 0.63x on the even traffic
    ],
)
def test_first_round_screen(candidate, screened):
    off = _figs((100.0, 400.0))
    assert pruning.screened_out(off, candidate, EVEN) is screened


def test_first_round_ratio_reads_round_one_only_and_needs_every_weighted_concurrency():
    off = _figs((100.0, 400.0), (100.0, 400.0))
    assert pruning.first_round_ratio(off, _figs((50.0, 200.0), (500.0, 2000.0)), EVEN) == pytest.approx(0.5)
    assert pruning.first_round_ratio(off, {1: {1: 50.0}}, EVEN) is None


@pytest.mark.parametrize(
    "proposal, contenders, expected",
    [
        ("model-choice", {"model-choice": _figs((90.0, 360.0)), "ngram-k4": _figs((130.0, 520.0))}, "model-choice"),
        ("off", {"a": _figs((110.0, 440.0)), "b": _figs((130.0, 520.0))}, "b"),
        (None, {"b": _figs((120.0, 480.0)), "a": _figs((120.0, 480.0))}, "a"),  # a tie goes by name
        ("model-choice", {}, None),
    ],
)
def test_leader(proposal, contenders, expected):
    assert pruning.leader(_figs((100.0, 400.0)), contenders, EVEN, proposal) == expected


def test_drop_needs_an_interval_and_names_why():
    off = _figs((100.0, 400.0), (100.0, 400.0))
    one_round = {"slow": _figs((70.0, 280.0))}
    assert pruning.to_drop(_figs((100.0, 400.0)), one_round, EVEN, None, 0.03) == {}
    contenders = {
        "lead": _figs((130.0, 520.0), (131.0, 524.0)),
        "slow": _figs((80.0, 320.0), (81.0, 324.0)),  # wholly below off
        "behind": _figs((110.0, 440.0), (111.0, 444.0)),  # above off, 15% below the leader every round
        "close": _figs((128.0, 512.0), (133.0, 532.0)),  # within the margin of the leader: kept
    }
    gone = pruning.to_drop(off, contenders, EVEN, "lead", 0.03)
    assert set(gone) == {"slow", "behind"}
    assert gone["slow"].startswith("measured slower than off on this traffic (0.805x [")
    assert gone["behind"].startswith("slower than lead by more than 3% on this traffic (0.847x [")


@pytest.mark.parametrize(
    "budget_left, rounds_left, expected",
    [
        (6, 2, ["choice", "ngram"]),  # 3 a round: off and two
        (4, 2, ["choice"]),  # 2 a round: off and the leader
        (3, 2, ["choice"]),  # off and the leader still fit once
        (1, 1, []),
    ],
)
def test_confirmed_fits_the_budget_leader_first(budget_left, rounds_left, expected):
    off = _figs((100.0, 400.0))
    contenders = {"ngram": _figs((140.0, 560.0)), "choice": _figs((120.0, 480.0))}
    found = pruning.confirmed(off, contenders, EVEN, "choice", budget_left, rounds_left)
    assert found == expected


def test_a_sweep_is_off_and_every_candidate_at_every_k():
    assert pruning.sweep_servers([4, 4]) == 9
    assert pruning.sweep_servers([]) == 1


def test_demo_world_same_answer_as_the_full_sweep_within_one_sweep_plus_one():
    # The demo with a useless draft (0.3x), n-gram at K = 4 and the model's n-gram schedule a little faster;
    # a sweep at K = 1..4 of both candidates is 9 servers, so the budget is 10.
    study = compare(
        {1: [0.3, 0.3], 2: [1.3, 1.25], 3: [1.35, 1.3]}, (1, 4), EVEN, proposal=3, budget=10, worlds=1000, seed=3
    )
    agree = study.agreement()
    assert agree.interval()[0] >= 0.95, str(agree)
    assert max(study.servers) <= 10 < study.full_servers
    assert all(served["1"] == 1 for served in study.rounds_served)  # the useless draft: served once


def test_demo_world_a_tight_budget_confirms_the_leader_only_and_says_how_often_that_differs():
    # At --max-k 3 a sweep is 7 servers: round 1 takes 4, so rounds 2 and 3 serve off and the leader only.
    study = compare(
        {1: [0.3, 0.3], 2: [1.3, 1.25], 3: [1.35, 1.3]}, (1, 4), EVEN, proposal=3, budget=8, worlds=1000, seed=3
    )
    assert max(study.servers) <= 8
    assert all(served["2"] == 1 and served["3"] == 3 for served in study.rounds_served)
    # Where the full sweep would have recommended n-gram at K = 4 because the model's choice fell short,
    # the pruned tune never measured it again: the two disagree there, never the other way round.
    assert all(p in (f, None) for f, p in zip(study.full, study.pruned))
    assert study.agreement().rate < 0.95


@pytest.mark.parametrize("candidates", [1, 4, 8])
def test_pruning_keeps_the_family_wise_rate_in_a_a_worlds(candidates):
    ratios = {k: [1.0, 1.0] for k in range(1, candidates + 1)}
    study = compare(ratios, (1, 4), EVEN, proposal=None, worlds=600, seed=11)
    any_faster = Share(sum(p is not None for p in study.pruned), len(study.pruned))
    assert any_faster.interval()[0] <= 0.05, str(any_faster)
