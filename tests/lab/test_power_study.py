"""The lab's power statements on machines it did not make normal (nim_specdec_lab.noise_worlds: t(3) tails,
and t(3) with a quarter of the rounds loaded and drift across the tune): the MDE's coverage and the realised
power of "about N rounds would tell". Each rate is held by the bound of its 95% Wilson interval on the side
that could fail; the former rules (the chi-square bound alone; "about N rounds" at the spread's bound) fail
them: coverage 66% on the harsh machine at 5 rounds, realised power near 100% at a true 1.3x."""

from __future__ import annotations

import pytest

from nim_specdec_lab.noise_worlds import HARSH, HEAVY, NORMAL
from nim_specdec_lab.power_study import mde_coverage, realised_power


@pytest.mark.parametrize("machine", [HEAVY, HARSH], ids=["t3-tails", "harsh"])
def test_the_reported_mde_covers_the_true_one_in_90_percent_of_runs_on_machines_that_are_not_normal(machine):
    found = mde_coverage(machine, 5, worlds=3000, seed=11)
    assert found.interval()[0] >= 0.9, str(found)


@pytest.mark.parametrize("machine", [NORMAL, HARSH], ids=["normal", "harsh"])
def test_about_n_rounds_realises_the_promised_power_within_ten_points_at_a_true_1_3x(machine):
    found = realised_power(machine, 1.3, measured=3, worlds=800, seed=7)
    assert found.said >= 300, found
    # Within 10 points of the promised 80%: the count's 95% interval reaches into [70%, 90%] (the former rule,
    # at the spread's bound, realised 98-100%: its whole interval above 90%).
    low, high = found.power.interval()
    assert low <= 0.9 and high >= 0.7, str(found.power)
