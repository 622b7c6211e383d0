"""The interval shown for tune's recommendation keeps its 95% in the worlds where it is picked: a small
fixed-seed study on the harsh machine (t(3) tails, loaded rounds, drift: nim_specdec_lab.noise_worlds.HARSH)
and on the normal one. Each rate is held by the bound of its 95% Wilson interval on the side that could
fail; the candidate's own interval, which tune showed before, fails the same bound there."""

from __future__ import annotations

from nim_specdec_lab.noise_worlds import HARSH, NORMAL
from nim_specdec_lab.tune.studies.selection_study import coverage

WEIGHTS = {1: 0.5, 4: 0.5}
# Eight candidates from 1.35x to 1.2x: the pick reads high (the winner's curse).
EIGHT = {k: [1.35 - (k - 1) * 0.15 / 7] * 2 for k in range(1, 9)}


def test_the_picks_interval_covers_its_truth_given_the_pick_on_a_harsh_machine():
    found = coverage(EIGHT, (1, 4), WEIGHTS, 5, HARSH, worlds=500, seed=3)
    assert found.picked.worlds >= 200, found  # enough picks for the bound to mean something
    assert found.picked.interval()[0] >= 0.95, found.picked
    assert found.own.interval()[1] < 0.95, found.own


def test_the_picks_interval_covers_its_truth_given_the_pick_at_three_rounds():
    found = coverage(EIGHT, (1, 4), WEIGHTS, 3, NORMAL, worlds=1000, seed=5)
    assert found.picked.worlds >= 250, found
    assert found.picked.interval()[0] >= 0.95, found.picked
    assert found.own.interval()[1] < 0.8, found.own
